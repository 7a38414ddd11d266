/** The In / Update / Out shapes of knowledge bases and their articles. */
import { Timestamp } from '../../http/openapi';
import { paginationQuery } from '../../http/pagination';
import { z } from '../../http/zod';

const name = z.string().trim().min(1, 'name must not be empty').max(200);
const description = z.string().max(2000);
export const KnowledgeBaseIn = z.strictObject({ name, description: description.optional() }).openapi('KnowledgeBaseCreate');
export const KnowledgeBaseUpdate = z.strictObject({ name: name.optional(), description: description.optional() }).openapi('KnowledgeBaseUpdate');
export const KnowledgeBaseOut = z
  .object({ id: z.string(), name: z.string(), description: z.string(), article_count: z.number().int(), created_at: Timestamp, updated_at: Timestamp })
  .openapi('KnowledgeBase');
const title = z.string().trim().min(1, 'title must not be empty').max(300);
const content = z.string().trim().min(1, 'content must not be empty').max(100_000);
export const ArticleIn = z.strictObject({ title, content }).openapi('ArticleCreate');
export const ArticleUpdate = z.strictObject({ title: title.optional(), content: content.optional() }).openapi('ArticleUpdate');
export const ArticleOut = z
  .object({ id: z.string(), knowledge_base_id: z.string(), title: z.string(), content: z.string(), created_at: Timestamp, updated_at: Timestamp })
  .openapi('Article');
export const KbParams = z.object({ knowledge_base_id: z.string().max(64) });
export const ArticleParams = KbParams.extend({ article_id: z.string().max(64) });
export const KnowledgeBaseListQuery = z.strictObject({ ...paginationQuery });
