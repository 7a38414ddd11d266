/**
 * Owns answering a question from a knowledge base: PostgreSQL full-text search over the
 * articles (OR of the question's stemmed terms, ranked with ts_rank_cd), a confidence in
 * [0, 1], and the optional rewrite by an OpenAI-compatible chat-completions endpoint.
 *
 * Confidence = the share of the question's distinct search terms that the best article
 * contains (stop words do not count), so "reset password" against an article about
 * resetting passwords is 1 and an unrelated question is 0.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';

export interface RetrievalResult {
  knowledgeBaseId: string;
  answer: string | null;
  confidence: number;
  articleIds: string[];
}

export class KnowledgeBaseMissingError extends Error {}
export class ModelRejectedError extends Error {}

const ANSWER_MAX = 2000;

export async function retrieveAnswer(
  em: EntityManager,
  organizationId: string,
  knowledgeBase: string,
  question: string,
): Promise<RetrievalResult> {
  // Nodes name a knowledge base by id; a name is accepted too, for hand-written configurations.
  const [kb] = await em.execute<Array<{ id: string }>>(
    `select id from knowledge_bases where organization_id = ? and deleted_at is null and (id = ? or name = ?)
      order by (id = ?) desc limit 1`,
    [organizationId, knowledgeBase, knowledgeBase, knowledgeBase],
  );
  if (!kb) throw new KnowledgeBaseMissingError(`knowledge base "${knowledgeBase}" not found`);

  const terms = (
    await em.execute<Array<{ lexeme: string }>>(`select distinct unnest(tsvector_to_array(to_tsvector('english', ?))) as lexeme`, [question])
  ).map((r) => r.lexeme);
  if (terms.length === 0) return { knowledgeBaseId: kb.id, answer: null, confidence: 0, articleIds: [] };

  const rows = await em.execute<Array<{ id: string; title: string; content: string; lexemes: string[]; rank: number }>>(
    `select a.id, a.title, a.content, tsvector_to_array(a.search_vector) as lexemes, ts_rank_cd(a.search_vector, q) as rank
       from knowledge_base_articles a, to_tsquery('english', ?) q
      where a.knowledge_base_id = ? and a.search_vector @@ q
      order by rank desc, a.created_at desc
      limit 3`,
    [terms.map((t) => `'${t.replace(/'/g, "''")}'`).join(' | '), kb.id],
  );
  const best = rows[0];
  if (!best) return { knowledgeBaseId: kb.id, answer: null, confidence: 0, articleIds: [] };
  const have = new Set(best.lexemes);
  const coverage = terms.filter((t) => have.has(t)).length / terms.length;
  return {
    knowledgeBaseId: kb.id,
    answer: best.content.slice(0, ANSWER_MAX),
    confidence: Math.round(coverage * 100) / 100,
    articleIds: rows.map((r) => r.id),
  };
}

/**
 * Rewrites a retrieved answer with the configured model. 4xx answers (other than 408/429)
 * are final (`ModelRejectedError`); others throw a plain error so the activity retries.
 */
export async function rewriteWithModel(
  config: Pick<Config, 'AI_MODEL_URL' | 'AI_MODEL_NAME' | 'AI_MODEL_API_KEY' | 'AI_MODEL_TIMEOUT_MS'>,
  question: string,
  context: string,
): Promise<string> {
  if (!config.AI_MODEL_URL) return context;
  const url = `${config.AI_MODEL_URL.replace(/\/+$/, '')}/chat/completions`;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(config.AI_MODEL_API_KEY ? { authorization: `Bearer ${config.AI_MODEL_API_KEY}` } : {}),
    },
    body: JSON.stringify({
      model: config.AI_MODEL_NAME,
      temperature: 0,
      messages: [
        { role: 'system', content: 'Answer the customer briefly using only the context. If the context does not answer, say so.' },
        { role: 'user', content: `Context:\n${context}\n\nQuestion: ${question}` },
      ],
    }),
    signal: AbortSignal.timeout(config.AI_MODEL_TIMEOUT_MS),
  });
  const body = (await res.json().catch(() => undefined)) as { choices?: Array<{ message?: { content?: unknown } }> } | undefined;
  if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) {
    throw new ModelRejectedError(`model endpoint answered ${res.status}`);
  }
  if (!res.ok) throw new Error(`model endpoint answered ${res.status}`);
  const content = body?.choices?.[0]?.message?.content;
  if (typeof content !== 'string' || content.trim() === '') throw new ModelRejectedError('model endpoint returned no answer');
  return content.trim().slice(0, ANSWER_MAX);
}
