/**
 * Owns the knowledge_bases and knowledge_base_articles tables: what `ai_response` nodes
 * answer from (knowledge-base.retrieval.ts reads them). Names are unique per organization
 * (409 KNOWLEDGE_BASE_ALREADY_EXISTS, decided by the unique index); deleting a knowledge base
 * soft-deletes it and removes its articles in one transaction.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { flushOrConflict } from '../../db/flush';
import { conflict, notFound } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { newId } from '../../ids';
import { KnowledgeBase, KnowledgeBaseArticle } from './knowledge-base.entity';

/** A knowledge base with its number of articles (what the API shows). */
export interface CountedKnowledgeBase {
  knowledgeBase: KnowledgeBase;
  articleCount: number;
}

const kbNotFound = () => notFound('KNOWLEDGE_BASE_NOT_FOUND', 'Knowledge base');
const nameTaken = (n: string) => conflict('KNOWLEDGE_BASE_ALREADY_EXISTS', `A knowledge base named "${n}" already exists`, 'name');

export class KnowledgeBaseService {
  constructor(private readonly em: EntityManager) {}

  async list(organizationId: string, page: Page): Promise<{ items: CountedKnowledgeBase[]; total: number }> {
    const [items, total] = await this.em.findAndCount(
      KnowledgeBase,
      { organizationId, deletedAt: null },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: offsetOf(page) },
    );
    const n = await this.articleCounts(items.map((k) => k.id));
    return { items: items.map((knowledgeBase) => ({ knowledgeBase, articleCount: n.get(knowledgeBase.id) ?? 0 })), total };
  }

  async create(organizationId: string, input: { name: string; description?: string }): Promise<CountedKnowledgeBase> {
    const knowledgeBase = this.em.create(KnowledgeBase, {
      id: newId('knowledgeBase'),
      organizationId,
      name: input.name,
      description: input.description ?? '',
    });
    await flushOrConflict(this.em, () => nameTaken(input.name));
    return { knowledgeBase, articleCount: 0 };
  }

  async get(organizationId: string, id: string): Promise<CountedKnowledgeBase> {
    return this.counted(await this.find(organizationId, id));
  }

  async update(organizationId: string, id: string, input: { name?: string; description?: string }): Promise<CountedKnowledgeBase> {
    const kb = await this.find(organizationId, id);
    if (input.name !== undefined) kb.name = input.name;
    if (input.description !== undefined) kb.description = input.description;
    kb.updatedAt = new Date();
    await flushOrConflict(this.em, () => nameTaken(kb.name));
    return this.counted(kb);
  }

  async delete(organizationId: string, id: string): Promise<void> {
    await this.em.transactional(async (tx) => {
      const kb = await this.find(organizationId, id, tx as EntityManager);
      await tx.nativeDelete(KnowledgeBaseArticle, { knowledgeBaseId: kb.id });
      kb.deletedAt = new Date();
      kb.updatedAt = kb.deletedAt;
    });
  }

  async listArticles(organizationId: string, knowledgeBaseId: string, page: Page) {
    const kb = await this.find(organizationId, knowledgeBaseId);
    const [items, total] = await this.em.findAndCount(
      KnowledgeBaseArticle,
      { knowledgeBaseId: kb.id },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: offsetOf(page) },
    );
    return { items, total };
  }

  async createArticle(organizationId: string, knowledgeBaseId: string, input: { title: string; content: string }): Promise<KnowledgeBaseArticle> {
    const kb = await this.find(organizationId, knowledgeBaseId);
    const article = this.em.create(KnowledgeBaseArticle, {
      id: newId('article'),
      knowledgeBaseId: kb.id,
      organizationId,
      title: input.title,
      content: input.content,
    });
    kb.updatedAt = new Date();
    await this.em.flush();
    return article;
  }

  async getArticle(organizationId: string, knowledgeBaseId: string, id: string): Promise<KnowledgeBaseArticle> {
    await this.find(organizationId, knowledgeBaseId);
    const article = await this.em.findOne(KnowledgeBaseArticle, { id, knowledgeBaseId, organizationId });
    if (!article) throw notFound('ARTICLE_NOT_FOUND', 'Article');
    return article;
  }

  async updateArticle(
    organizationId: string,
    knowledgeBaseId: string,
    id: string,
    input: { title?: string; content?: string },
  ): Promise<KnowledgeBaseArticle> {
    const article = await this.getArticle(organizationId, knowledgeBaseId, id);
    if (input.title !== undefined) article.title = input.title;
    if (input.content !== undefined) article.content = input.content;
    article.updatedAt = new Date();
    await this.em.flush();
    return article;
  }

  async deleteArticle(organizationId: string, knowledgeBaseId: string, id: string): Promise<KnowledgeBaseArticle> {
    const article = await this.getArticle(organizationId, knowledgeBaseId, id);
    await this.em.nativeDelete(KnowledgeBaseArticle, { id: article.id });
    return article;
  }

  private async find(organizationId: string, id: string, em: EntityManager = this.em): Promise<KnowledgeBase> {
    const kb = await em.findOne(KnowledgeBase, { id, organizationId, deletedAt: null });
    if (!kb) throw kbNotFound();
    return kb;
  }

  private async counted(knowledgeBase: KnowledgeBase): Promise<CountedKnowledgeBase> {
    return { knowledgeBase, articleCount: (await this.articleCounts([knowledgeBase.id])).get(knowledgeBase.id) ?? 0 };
  }

  private async articleCounts(ids: string[]): Promise<Map<string, number>> {
    if (ids.length === 0) return new Map();
    const rows = await this.em.execute<Array<{ id: string; n: number }>>(
      `select knowledge_base_id as id, count(*)::int as n from knowledge_base_articles where knowledge_base_id in (${ids.map(() => '?').join(',')}) group by 1`,
      ids,
    );
    return new Map(rows.map((r) => [r.id, r.n]));
  }
}
