/**
 * Knowledge bases and their articles, the source `ai_response` nodes answer from. Articles
 * carry a generated `search_vector` column (not mapped here) that retrieval ranks with
 * PostgreSQL full-text search.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';

export class KnowledgeBase {
  [OptionalProps]?: 'description' | 'createdAt' | 'updatedAt' | 'deletedAt';
  id!: string;
  organizationId!: string;
  name!: string;
  description = '';
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
  deletedAt: Date | null = null;
}

export const KnowledgeBaseSchema = new EntitySchema<KnowledgeBase>({
  class: KnowledgeBase,
  tableName: 'knowledge_bases',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    name: { type: 'string' },
    description: { type: 'text' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
    deletedAt: { type: 'Date', fieldName: 'deleted_at', nullable: true },
  },
});

export class KnowledgeBaseArticle {
  [OptionalProps]?: 'createdAt' | 'updatedAt';
  id!: string;
  knowledgeBaseId!: string;
  organizationId!: string;
  title!: string;
  content!: string;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

export const KnowledgeBaseArticleSchema = new EntitySchema<KnowledgeBaseArticle>({
  class: KnowledgeBaseArticle,
  tableName: 'knowledge_base_articles',
  properties: {
    id: { type: 'string', primary: true },
    knowledgeBaseId: { type: 'string', fieldName: 'knowledge_base_id' },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    title: { type: 'string' },
    content: { type: 'text' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
  },
});
