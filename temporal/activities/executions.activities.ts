/**
 * Owns the execution activities: one activity per node (it delivers, and records the step
 * in the same transaction as the transcript row and the message.sent event), the form
 * prompt (which opens the wait for the reply BEFORE sending, so a reply racing the send
 * still finds the execution), the closing of a wait whose timeout fired, and the
 * completion. Each one first looks for what an earlier attempt already recorded, so a
 * retry after a crash returns that instead of acting twice.
 *
 * Every node activity first checks that the execution is still `running` in PostgreSQL:
 * a cancel is written there first, and a node activity of a cancelled execution sends
 * nothing (non-retryable ExecutionNotRunning), even when the Temporal cancel has not
 * reached the run (worker down, Temporal unreachable from the API, an activity task
 * dispatched before the cancel). A send already in flight when the cancel lands is not
 * recalled.
 *
 * Final failures are ApplicationFailures of the types in ExecutionErrorTypes; the workflow
 * maps them to the execution's error_type. Whether a failure is retried is decided here,
 * by temporal/failures.ts: our own infrastructure being unavailable is waited out (up to
 * ACTIVITY_INFRA_RETRY_HOURS), a provider's failure gets the node's bounded budget and
 * then `ExecutionApiError`. Provider calls are wrapped in `ProviderError` so that their
 * connection errors are never taken for our database's.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Services } from '../../src/services';
import { failpoint } from '../../src/failpoints';
import { endpointsFromConfig, ProviderError } from '../../src/failures';
import { channelAdapterFor, ChannelRejectedError } from '../../src/modules/executions/channel-adapter';
import {
  clearWaiting,
  closeWait,
  type Completion,
  type ExecutionContext,
  findStepOutput,
  finishExecution,
  insertStep,
  loadNodeState,
  openWait,
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
  type CustomerReply,
  ExecutionErrorTypes,
  type FormNodeSpec,
  formScores,
  formWaitKey,
  type MessageNodeSpec,
} from '../executions.shared';
import { dependencyWaitsFor, type FailurePolicy, type ProviderBudget, runWithFailurePolicy } from '../failures';

export const DEFAULT_CONFIDENCE_THRESHOLD = 0.5;
export const DEFAULT_FALLBACK = "I'm not sure about that one. A teammate will follow up with you shortly.";

export interface NodeActivityInput<N> {
  ctx: ExecutionContext;
  node: N;
  /** When the node started (workflow time, ms). */
  startedAt: number;
}

/** A send is seconds; five attempts span about half a minute of provider trouble. */
export const NODE_PROVIDER_BUDGET: ProviderBudget = { maximumAttempts: 5, initialIntervalMs: 500, maximumIntervalMs: 10_000, finalType: ExecutionErrorTypes.api };
/** ai_response may wait on a model endpoint: fewer, slower attempts. */
export const AI_PROVIDER_BUDGET: ProviderBudget = { maximumAttempts: 4, initialIntervalMs: 1_000, maximumIntervalMs: 15_000, finalType: ExecutionErrorTypes.api };

const notRunning = (ctx: ExecutionContext, what: string) =>
  ApplicationFailure.nonRetryable(`execution ${ctx.executionId} is no longer running; ${what} skipped`, ExecutionErrorTypes.notRunning);

/** `scores` only for forms with rating / nps fields (the analytics rollups read them), so other steps keep their output shape. */
const scoresOf = (fields: FormNodeSpec['fields'], answers: Record<string, string>) => {
  const scores = formScores(fields, answers);
  return scores ? { scores } : {};
};

export function createExecutionActivities(deps: { services: Services }) {
  const { services } = deps;
  const em = () => services.orm.em.fork() as EntityManager;
  const adapter = channelAdapterFor(services.config);
  const policy: FailurePolicy = {
    waits: dependencyWaitsFor(services.metrics.registry),
    endpoints: endpointsFromConfig(services.config),
    infraRetryMs: services.config.ACTIVITY_INFRA_RETRY_HOURS * 3_600_000,
  };
  /** The completion must be written: it waits out any outage, however long. */
  const completionPolicy: FailurePolicy = { ...policy, infraRetryMs: Infinity };

  /**
   * The step an earlier attempt recorded (returned as is), else a check that the execution
   * still runs: one round trip for both.
   */
  const doneOrRunning = async (ctx: ExecutionContext, nodeId: string): Promise<Record<string, unknown> | undefined> => {
    const state = await loadNodeState(em(), ctx.executionId, nodeId);
    if (state.output) return state.output;
    if (state.status !== 'running') throw notRunning(ctx, `node ${nodeId}`);
    return undefined;
  };

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
      throw new ProviderError('channel', `channel provider: ${(err as Error).message}`, { cause: err });
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

  const impl = {
    async runMessageNode({ ctx, node, startedAt }: NodeActivityInput<MessageNodeSpec>): Promise<{ message_sent: string }> {
      const done = await doneOrRunning(ctx, node.id);
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
      const done = await doneOrRunning(ctx, node.id);
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
          throw new ProviderError('model', `model endpoint: ${(err as Error).message}`, { cause: err });
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

    /**
     * Asks for one form field (attempt n). The wait is opened (committed) before the prompt
     * is sent: a reply that arrives while the send is in flight claims it and reaches this
     * execution instead of starting others.
     */
    async sendFormPrompt(input: { ctx: ExecutionContext; nodeId: string; field: string; attempt: number; text: string }): Promise<void> {
      const { ctx, nodeId, field, attempt, text } = input;
      const waitKey = formWaitKey(ctx.executionId, nodeId, field, attempt);
      const opened = await em().transactional((tx) => openWait(tx as EntityManager, ctx, { nodeId, field, waitKey }));
      if (opened === 'not_running') throw notRunning(ctx, `prompt ${waitKey}`);
      await deliver(ctx, waitKey, nodeId, text);
      await em().transactional((tx) => storeOutboundMessage(tx as EntityManager, ctx, { dedupeKey: waitKey, nodeId, text }));
    },

    /**
     * The form's timeout fired without a reply in the run: closes the wait, unless a reply
     * claimed it first (its signal late or lost), in which case that reply is returned.
     */
    async closeFormWait(input: { ctx: ExecutionContext; nodeId: string; field: string; attempt: number }): Promise<{ reply: CustomerReply | null }> {
      const { ctx, nodeId, field, attempt } = input;
      const waitKey = formWaitKey(ctx.executionId, nodeId, field, attempt);
      const closed = await em().transactional((tx) => closeWait(tx as EntityManager, ctx, waitKey));
      if (closed.state === 'not_running') throw notRunning(ctx, `wait ${waitKey}`);
      return { reply: closed.state === 'claimed' ? closed.reply : null };
    },

    async recordFormStep({
      ctx,
      node,
      startedAt,
      answers,
    }: NodeActivityInput<FormNodeSpec> & { answers: Record<string, string> }): Promise<void> {
      await em().transactional(async (tx) => {
        // Locked, so a cancel cannot slip in between the check and the step.
        const [exec] = await tx.execute<Array<{ status: string }>>('select status from executions where id = ? for update', [ctx.executionId]);
        if (exec?.status !== 'running') throw notRunning(ctx, `step ${node.id}`);
        await insertStep(tx as EntityManager, ctx, {
          nodeId: node.id,
          type: 'form',
          status: 'completed',
          startedAt: new Date(startedAt),
          input: { fields: node.fields.map((f) => f.name) },
          output: { form_data: answers, ...scoresOf(node.fields, answers) },
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
      const finished = await em().transactional(async (tx) => {
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
      // Crash tests die here: the finish is committed, Temporal has not recorded it, so it runs again.
      failpoint(services.config, 'execution.after_finish');
      return finished;
    },
  };

  type In<K extends keyof typeof impl> = Parameters<(typeof impl)[K]>[0];
  return {
    runMessageNode: (i: In<'runMessageNode'>) => runWithFailurePolicy(policy, NODE_PROVIDER_BUDGET, () => impl.runMessageNode(i)),
    runAiResponseNode: (i: In<'runAiResponseNode'>) => runWithFailurePolicy(policy, AI_PROVIDER_BUDGET, () => impl.runAiResponseNode(i)),
    sendFormPrompt: (i: In<'sendFormPrompt'>) => runWithFailurePolicy(policy, NODE_PROVIDER_BUDGET, () => impl.sendFormPrompt(i)),
    closeFormWait: (i: In<'closeFormWait'>) => runWithFailurePolicy(policy, NODE_PROVIDER_BUDGET, () => impl.closeFormWait(i)),
    recordFormStep: (i: In<'recordFormStep'>) => runWithFailurePolicy(policy, NODE_PROVIDER_BUDGET, () => impl.recordFormStep(i)),
    completeExecution: (i: In<'completeExecution'>) => runWithFailurePolicy(completionPolicy, undefined, () => impl.completeExecution(i)),
  };
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
