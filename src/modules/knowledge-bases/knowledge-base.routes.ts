/**
 * The knowledge base endpoints: knowledge bases and their articles, what `ai_response`
 * nodes answer from (a node's `knowledge_base` names one by id). The queries are the
 * service's (knowledge-base.service.ts).
 */
import { MessageOut } from '../../http/openapi';
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import type { KnowledgeBaseArticle } from './knowledge-base.entity';
import {
  ArticleIn,
  ArticleOut,
  ArticleParams,
  ArticleUpdate,
  KbParams,
  KnowledgeBaseIn,
  KnowledgeBaseListQuery,
  KnowledgeBaseOut,
  KnowledgeBaseUpdate,
} from './knowledge-base.schemas';
import { type CountedKnowledgeBase, KnowledgeBaseService } from './knowledge-base.service';

const KB_NOT_FOUND: [number, string] = [404, 'KNOWLEDGE_BASE_NOT_FOUND'];
const ARTICLE_NOT_FOUND: [number, string] = [404, 'ARTICLE_NOT_FOUND'];

const toKbOut = ({ knowledgeBase: kb, articleCount }: CountedKnowledgeBase): z.output<typeof KnowledgeBaseOut> => ({
  id: kb.id,
  name: kb.name,
  description: kb.description,
  article_count: articleCount,
  created_at: kb.createdAt.toISOString(),
  updated_at: kb.updatedAt.toISOString(),
});

const toArticleOut = (a: KnowledgeBaseArticle): z.output<typeof ArticleOut> => ({
  id: a.id,
  knowledge_base_id: a.knowledgeBaseId,
  title: a.title,
  content: a.content,
  created_at: a.createdAt.toISOString(),
  updated_at: a.updatedAt.toISOString(),
});

export function knowledgeBaseRoutes(services: Services): AnyRoute[] {
  const svc = () => new KnowledgeBaseService(services.orm.em.fork());
  const tag = 'Knowledge bases';

  return [
    defineRoute({
      method: 'get',
      path: '/v1/knowledge-bases',
      operationId: 'listKnowledgeBases',
      summary: 'List knowledge bases',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      query: KnowledgeBaseListQuery,
      response: z.object({ data: z.array(KnowledgeBaseOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { items, total } = await svc().list(credential.organizationId, query);
        return paginate(items.map(toKbOut), query, total);
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
        return { data: toKbOut(await svc().create(credential.organizationId, body)) };
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
        return { data: toKbOut(await svc().get(credential.organizationId, params.knowledge_base_id)) };
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
        return { data: toKbOut(await svc().update(credential.organizationId, params.knowledge_base_id, body)) };
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
        await svc().delete(credential.organizationId, params.knowledge_base_id);
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
      query: KnowledgeBaseListQuery,
      response: z.object({ data: z.array(ArticleOut), pagination: PaginationOut }),
      errors: [KB_NOT_FOUND],
      async handler({ params, query, credential }) {
        const { items, total } = await svc().listArticles(credential.organizationId, params.knowledge_base_id, query);
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
        return { data: toArticleOut(await svc().createArticle(credential.organizationId, params.knowledge_base_id, body)) };
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
        return { data: toArticleOut(await svc().getArticle(credential.organizationId, params.knowledge_base_id, params.article_id)) };
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
        return { data: toArticleOut(await svc().updateArticle(credential.organizationId, params.knowledge_base_id, params.article_id, body)) };
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
        const a = await svc().deleteArticle(credential.organizationId, params.knowledge_base_id, params.article_id);
        return { message: `Article ${a.id} deleted` };
      },
    }),
  ];
}
