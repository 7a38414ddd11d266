/**
 * Knowledge bases and their articles: what `ai_response` nodes answer from. A node's
 * `knowledge_base` names a knowledge base by id. Names are unique per organization
 * (409 KNOWLEDGE_BASE_ALREADY_EXISTS); deleting a knowledge base removes its articles.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { flushOrConflict } from '../../db/flush';
import { conflict, notFound } from '../../http/errors';
import { MessageOut, Timestamp } from '../../http/openapi';
import { offsetOf, paginate, PaginationOut, paginationQuery } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { KnowledgeBase, KnowledgeBaseArticle } from './knowledge-base.entity';

const name = z.string().trim().min(1, 'name must not be empty').max(200);
const description = z.string().max(2000);
const KnowledgeBaseIn = z.strictObject({ name, description: description.optional() }).openapi('KnowledgeBaseCreate');
const KnowledgeBaseUpdate = z.strictObject({ name: name.optional(), description: description.optional() }).openapi('KnowledgeBaseUpdate');
const KnowledgeBaseOut = z
  .object({ id: z.string(), name: z.string(), description: z.string(), article_count: z.number().int(), created_at: Timestamp, updated_at: Timestamp })
  .openapi('KnowledgeBase');
const title = z.string().trim().min(1, 'title must not be empty').max(300);
const content = z.string().trim().min(1, 'content must not be empty').max(100_000);
const ArticleIn = z.strictObject({ title, content }).openapi('ArticleCreate');
const ArticleUpdate = z.strictObject({ title: title.optional(), content: content.optional() }).openapi('ArticleUpdate');
const ArticleOut = z
  .object({ id: z.string(), knowledge_base_id: z.string(), title: z.string(), content: z.string(), created_at: Timestamp, updated_at: Timestamp })
  .openapi('Article');
const KbParams = z.object({ knowledge_base_id: z.string().max(64) });
const ArticleParams = KbParams.extend({ article_id: z.string().max(64) });
const ListQuery = z.strictObject({ ...paginationQuery });

const KB_NOT_FOUND: [number, string] = [404, 'KNOWLEDGE_BASE_NOT_FOUND'];
const ARTICLE_NOT_FOUND: [number, string] = [404, 'ARTICLE_NOT_FOUND'];
const kbNotFound = () => notFound('KNOWLEDGE_BASE_NOT_FOUND', 'Knowledge base');
const nameTaken = (n: string) => conflict('KNOWLEDGE_BASE_ALREADY_EXISTS', `A knowledge base named "${n}" already exists`, 'name');

const toArticleOut = (a: KnowledgeBaseArticle): z.output<typeof ArticleOut> => ({
  id: a.id,
  knowledge_base_id: a.knowledgeBaseId,
  title: a.title,
  content: a.content,
  created_at: a.createdAt.toISOString(),
  updated_at: a.updatedAt.toISOString(),
});

export function knowledgeBaseRoutes(services: Services): AnyRoute[] {
  const em = () => services.orm.em.fork() as EntityManager;
  const tag = 'Knowledge bases';

  const counts = async (e: EntityManager, ids: string[]) => {
    if (ids.length === 0) return new Map<string, number>();
    const rows = await e.execute<Array<{ id: string; n: number }>>(
      `select knowledge_base_id as id, count(*)::int as n from knowledge_base_articles where knowledge_base_id in (${ids.map(() => '?').join(',')}) group by 1`,
      ids,
    );
    return new Map(rows.map((r) => [r.id, r.n]));
  };
  const toKbOut = (kb: KnowledgeBase, n: number): z.output<typeof KnowledgeBaseOut> => ({
    id: kb.id,
    name: kb.name,
    description: kb.description,
    article_count: n,
    created_at: kb.createdAt.toISOString(),
    updated_at: kb.updatedAt.toISOString(),
  });
  const requireKb = async (e: EntityManager, organizationId: string, id: string) => {
    const kb = await e.findOne(KnowledgeBase, { id, organizationId, deletedAt: null });
    if (!kb) throw kbNotFound();
    return kb;
  };
  const requireArticle = async (e: EntityManager, organizationId: string, kbId: string, id: string) => {
    await requireKb(e, organizationId, kbId);
    const a = await e.findOne(KnowledgeBaseArticle, { id, knowledgeBaseId: kbId, organizationId });
    if (!a) throw notFound('ARTICLE_NOT_FOUND', 'Article');
    return a;
  };
  const one = async (e: EntityManager, kb: KnowledgeBase) => ({ data: toKbOut(kb, (await counts(e, [kb.id])).get(kb.id) ?? 0) });

  return [
    defineRoute({
      method: 'get',
      path: '/v1/knowledge-bases',
      operationId: 'listKnowledgeBases',
      summary: 'List knowledge bases',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      query: ListQuery,
      response: z.object({ data: z.array(KnowledgeBaseOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const e = em();
        const [items, total] = await e.findAndCount(
          KnowledgeBase,
          { organizationId: credential.organizationId, deletedAt: null },
          { orderBy: { createdAt: 'desc', id: 'desc' }, limit: query.limit, offset: offsetOf(query) },
        );
        const n = await counts(e, items.map((k) => k.id));
        return paginate(items.map((k) => toKbOut(k, n.get(k.id) ?? 0)), query, total);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/knowledge-bases',
      operationId: 'createKnowledgeBase',
      summary: 'Create a knowledge base',
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      body: KnowledgeBaseIn,
      status: 201,
      response: z.object({ data: KnowledgeBaseOut }),
      errors: [[409, 'KNOWLEDGE_BASE_ALREADY_EXISTS']],
      async handler({ body, credential }) {
        const e = em();
        const kb = e.create(KnowledgeBase, {
          id: newId('knowledgeBase'),
          organizationId: credential.organizationId,
          name: body.name,
          description: body.description ?? '',
        });
        await flushOrConflict(e, () => nameTaken(body.name));
        return { data: toKbOut(kb, 0) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/knowledge-bases/{knowledge_base_id}',
      operationId: 'getKnowledgeBase',
      summary: 'Get a knowledge base',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: KbParams,
      response: z.object({ data: KnowledgeBaseOut }),
      errors: [KB_NOT_FOUND],
      async handler({ params, credential }) {
        const e = em();
        return one(e, await requireKb(e, credential.organizationId, params.knowledge_base_id));
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/knowledge-bases/{knowledge_base_id}',
      operationId: 'updateKnowledgeBase',
      summary: 'Update a knowledge base',
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: KbParams,
      body: KnowledgeBaseUpdate,
      response: z.object({ data: KnowledgeBaseOut }),
      errors: [KB_NOT_FOUND, [409, 'KNOWLEDGE_BASE_ALREADY_EXISTS']],
      async handler({ params, body, credential }) {
        const e = em();
        const kb = await requireKb(e, credential.organizationId, params.knowledge_base_id);
        if (body.name !== undefined) kb.name = body.name;
        if (body.description !== undefined) kb.description = body.description;
        kb.updatedAt = new Date();
        await flushOrConflict(e, () => nameTaken(kb.name));
        return one(e, kb);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/knowledge-bases/{knowledge_base_id}',
      operationId: 'deleteKnowledgeBase',
      summary: 'Delete a knowledge base and its articles',
      tag,
      scope: 'workflows:delete',
      limits: ['resource_delete'],
      params: KbParams,
      response: MessageOut,
      errors: [KB_NOT_FOUND],
      async handler({ params, credential }) {
        const e = em();
        await e.transactional(async (tx) => {
          const kb = await requireKb(tx as EntityManager, credential.organizationId, params.knowledge_base_id);
          await tx.nativeDelete(KnowledgeBaseArticle, { knowledgeBaseId: kb.id });
          kb.deletedAt = new Date();
          kb.updatedAt = kb.deletedAt;
        });
        return { message: `Knowledge base ${params.knowledge_base_id} deleted` };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/knowledge-bases/{knowledge_base_id}/articles',
      operationId: 'listArticles',
      summary: "List a knowledge base's articles",
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: KbParams,
      query: ListQuery,
      response: z.object({ data: z.array(ArticleOut), pagination: PaginationOut }),
      errors: [KB_NOT_FOUND],
      async handler({ params, query, credential }) {
        const e = em();
        const kb = await requireKb(e, credential.organizationId, params.knowledge_base_id);
        const [items, total] = await e.findAndCount(
          KnowledgeBaseArticle,
          { knowledgeBaseId: kb.id },
          { orderBy: { createdAt: 'desc', id: 'desc' }, limit: query.limit, offset: offsetOf(query) },
        );
        return paginate(items.map(toArticleOut), query, total);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/knowledge-bases/{knowledge_base_id}/articles',
      operationId: 'createArticle',
      summary: 'Add an article to a knowledge base',
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: KbParams,
      body: ArticleIn,
      status: 201,
      response: z.object({ data: ArticleOut }),
      errors: [KB_NOT_FOUND],
      async handler({ params, body, credential }) {
        const e = em();
        const kb = await requireKb(e, credential.organizationId, params.knowledge_base_id);
        const a = e.create(KnowledgeBaseArticle, {
          id: newId('article'),
          knowledgeBaseId: kb.id,
          organizationId: credential.organizationId,
          title: body.title,
          content: body.content,
        });
        kb.updatedAt = new Date();
        await e.flush();
        return { data: toArticleOut(a) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/knowledge-bases/{knowledge_base_id}/articles/{article_id}',
      operationId: 'getArticle',
      summary: 'Get an article',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: ArticleParams,
      response: z.object({ data: ArticleOut }),
      errors: [KB_NOT_FOUND, ARTICLE_NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toArticleOut(await requireArticle(em(), credential.organizationId, params.knowledge_base_id, params.article_id)) };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/knowledge-bases/{knowledge_base_id}/articles/{article_id}',
      operationId: 'updateArticle',
      summary: 'Update an article',
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: ArticleParams,
      body: ArticleUpdate,
      response: z.object({ data: ArticleOut }),
      errors: [KB_NOT_FOUND, ARTICLE_NOT_FOUND],
      async handler({ params, body, credential }) {
        const e = em();
        const a = await requireArticle(e, credential.organizationId, params.knowledge_base_id, params.article_id);
        if (body.title !== undefined) a.title = body.title;
        if (body.content !== undefined) a.content = body.content;
        a.updatedAt = new Date();
        await e.flush();
        return { data: toArticleOut(a) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/knowledge-bases/{knowledge_base_id}/articles/{article_id}',
      operationId: 'deleteArticle',
      summary: 'Delete an article',
      tag,
      scope: 'workflows:delete',
      limits: ['resource_delete'],
      params: ArticleParams,
      response: MessageOut,
      errors: [KB_NOT_FOUND, ARTICLE_NOT_FOUND],
      async handler({ params, credential }) {
        const e = em();
        const a = await requireArticle(e, credential.organizationId, params.knowledge_base_id, params.article_id);
        await e.nativeDelete(KnowledgeBaseArticle, { id: a.id });
        return { message: `Article ${a.id} deleted` };
      },
    }),
  ];
}
