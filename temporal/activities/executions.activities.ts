/**
 * Owns the execution activities: one activity per node (it delivers, and records the step
 * in the same transaction as the transcript row and the message.sent event), the form
 * prompt that also marks the execution as waiting, and the completion. Each one first
 * looks for what an earlier attempt already recorded, so a retry after a crash returns
 * that instead of acting twice.
 *
 * Final failures are ApplicationFailures of the types in ExecutionErrorTypes; the workflow
 * maps them to the execution's error_type.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Services } from '../../src/services';
import { channelAdapterFor, ChannelRejectedError } from '../../src/modules/executions/channel-adapter';
import {
  clearWaiting,
  type Completion,
  type ExecutionContext,
  findStepOutput,
  finishExecution,
  insertStep,
  setWaiting,
  storeOutboundMessage,
} from '../../src/modules/executions/execution.recorder';
import {
  KnowledgeBaseMissingError,
  ModelRejectedError,
  retrieveAnswer,
  rewriteWithModel,
} from '../../src/modules/knowledge-bases/knowledge-base.retrieval';
import {
  type AiResponseNodeSpec,
  ExecutionErrorTypes,
  type FormNodeSpec,
  type MessageNodeSpec,
} from '../executions.shared';

export const DEFAULT_CONFIDENCE_THRESHOLD = 0.5;
export const DEFAULT_FALLBACK = "I'm not sure about that one. A teammate will follow up with you shortly.";

export interface NodeActivityInput<N> {
  ctx: ExecutionContext;
  node: N;
  /** When the node started (workflow time, ms). */
  startedAt: number;
}

export function createExecutionActivities(deps: { services: Services }) {
  const { services } = deps;
  const em = () => services.orm.em.fork() as EntityManager;
  const adapter = channelAdapterFor(services.config);

  const externalIdOf = async (ctx: ExecutionContext): Promise<string | null> => {
    if (!ctx.customerId) return null;
    const [row] = await em().execute<Array<{ external_id: string }>>('select external_id from customers where id = ?', [ctx.customerId]);
    return row?.external_id ?? null;
  };

  /** Delivers through the channel adapter; a provider's final refusal becomes a non-retryable api error. */
  const deliver = async (ctx: ExecutionContext, dedupeKey: string, nodeId: string, text: string) => {
    try {
      await adapter.deliver({
        dedupeKey,
        organizationId: ctx.organizationId,
        channel: ctx.channel,
        customerId: ctx.customerId,
        externalId: adapter.name === 'http' ? await externalIdOf(ctx) : null,
        executionId: ctx.executionId,
        nodeId,
        text,
      });
    } catch (err) {
      if (err instanceof ChannelRejectedError) throw ApplicationFailure.nonRetryable(err.message, ExecutionErrorTypes.api);
      throw err;
    }
  };

  /** Sends `text` as the node's message and records the node's step, once. */
  const sendAndRecord = async (
    ctx: ExecutionContext,
    step: { nodeId: string; type: string; startedAt: number; input: Record<string, unknown>; output: Record<string, unknown> },
    text: string,
  ) => {
    const dedupeKey = `${ctx.executionId}:${step.nodeId}`;
    await deliver(ctx, dedupeKey, step.nodeId, text);
    await em().transactional(async (tx) => {
      await storeOutboundMessage(tx as EntityManager, ctx, { dedupeKey, nodeId: step.nodeId, text });
      await insertStep(tx as EntityManager, ctx, { ...step, status: 'completed', startedAt: new Date(step.startedAt) });
    });
    return (await findStepOutput(em(), ctx.executionId, step.nodeId)) ?? step.output;
  };

  return {
    async runMessageNode({ ctx, node, startedAt }: NodeActivityInput<MessageNodeSpec>): Promise<{ message_sent: string }> {
      const done = await findStepOutput(em(), ctx.executionId, node.id);
      if (done) return done as { message_sent: string };
      const out = await sendAndRecord(
        ctx,
        { nodeId: node.id, type: 'message', startedAt, input: { content: node.content }, output: { message_sent: node.content } },
        node.content,
      );
      return out as { message_sent: string };
    },

    async runAiResponseNode({
      ctx,
      node,
      startedAt,
      question,
    }: NodeActivityInput<AiResponseNodeSpec> & { question: string }): Promise<{ response: string; confidence: number }> {
      const done = await findStepOutput(em(), ctx.executionId, node.id);
      if (done) return done as { response: string; confidence: number };
      let retrieved;
      try {
        retrieved = await retrieveAnswer(em(), ctx.organizationId, node.knowledge_base, question);
      } catch (err) {
        if (err instanceof KnowledgeBaseMissingError) throw ApplicationFailure.nonRetryable(err.message, ExecutionErrorTypes.validation);
        throw err;
      }
      const threshold = node.confidence_threshold ?? DEFAULT_CONFIDENCE_THRESHOLD;
      const fallbackUsed = retrieved.answer === null || retrieved.confidence < threshold;
      let response: string;
      if (fallbackUsed) {
        response = node.fallback ?? DEFAULT_FALLBACK;
      } else {
        try {
          response = await rewriteWithModel(services.config, question, retrieved.answer!);
        } catch (err) {
          if (err instanceof ModelRejectedError) throw ApplicationFailure.nonRetryable(err.message, ExecutionErrorTypes.api);
          throw err;
        }
      }
      const out = await sendAndRecord(
        ctx,
        {
          nodeId: node.id,
          type: 'ai_response',
          startedAt,
          input: { question, knowledge_base: retrieved.knowledgeBaseId },
          output: {
            response,
            confidence: retrieved.confidence,
            fallback_used: fallbackUsed,
            article_ids: retrieved.articleIds,
            model_used: !fallbackUsed && services.config.AI_MODEL_URL !== undefined,
          },
        },
        response,
      );
      return out as { response: string; confidence: number };
    },

    /** Asks for one form field (attempt n) and marks the execution as waiting for the reply. */
    async sendFormPrompt(input: { ctx: ExecutionContext; nodeId: string; field: string; attempt: number; text: string }): Promise<void> {
      const { ctx, nodeId, field, attempt, text } = input;
      const dedupeKey = `${ctx.executionId}:${nodeId}:${field}:${attempt}`;
      await deliver(ctx, dedupeKey, nodeId, text);
      await em().transactional(async (tx) => {
        await storeOutboundMessage(tx as EntityManager, ctx, { dedupeKey, nodeId, text });
        await setWaiting(tx as EntityManager, ctx, nodeId, field);
      });
    },

    async recordFormStep({
      ctx,
      node,
      startedAt,
      answers,
    }: NodeActivityInput<FormNodeSpec> & { answers: Record<string, string> }): Promise<void> {
      await em().transactional(async (tx) => {
        await insertStep(tx as EntityManager, ctx, {
          nodeId: node.id,
          type: 'form',
          status: 'completed',
          startedAt: new Date(startedAt),
          input: { fields: node.fields.map((f) => f.name) },
          output: { form_data: answers },
        });
        await clearWaiting(tx as EntityManager, ctx);
      });
    },

    /** Records the failed step (if a node failed) and the final status, once. */
    async completeExecution(input: {
      ctx: ExecutionContext;
      completion: Completion;
      failedStep?: { nodeId: string; type: string; startedAt: number; input: Record<string, unknown> };
    }): Promise<boolean> {
      const { ctx, completion, failedStep } = input;
      return await em().transactional(async (tx) => {
        if (failedStep) {
          await insertStep(tx as EntityManager, ctx, {
            ...failedStep,
            status: 'failed',
            startedAt: new Date(failedStep.startedAt),
            output: {},
            ...(completion.errorType ? { errorType: completion.errorType } : {}),
            ...(completion.errorMessage ? { errorMessage: completion.errorMessage } : {}),
          });
        }
        return await finishExecution(tx as EntityManager, ctx.executionId, completion);
      });
    },
  };
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
