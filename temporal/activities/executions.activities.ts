/**
 * Owns the execution activities: one activity per node (it delivers, and records the step
 * in the same statement as the transcript row and the message.sent event), one for a run
 * of message nodes (`runMessageRun`, each node as `runMessageNode` does it), the form
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
 * Everything they deliver or record goes through the `ExecutionSink` they are built with
 * (src/modules/executions/execution-sink.ts): live, or a dry run's that sends and counts
 * nothing. This file imports neither the channel adapter's delivery nor the recorder.
 *
 * Final failures are ApplicationFailures of the types in ExecutionErrorTypes; the workflow
 * maps them to the execution's error_type. Whether a failure is retried is decided here,
 * by temporal/failures.ts: our own infrastructure being unavailable is waited out (up to
 * ACTIVITY_INFRA_RETRY_HOURS), a provider's failure gets the node's bounded budget and
 * then `ExecutionApiError`. Provider calls are wrapped in `ProviderError` so that their
 * connection errors are never taken for our database's.
 */
import { infraRetryMsOf } from '../../src/config';
import { ApplicationFailure } from '@temporalio/activity';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Services } from '../../src/services';
import { failpoint } from '../../src/failpoints';
import { serviceMetricsFor } from '../../src/telemetry/service-metrics';
import { endpointsFromConfig, ProviderError } from '../../src/failures';
import { ChannelRejectedError } from '../../src/modules/channels/fallback-adapter';
import type { ExecutionContext, ExecutionSink, RunCompletion, SendReceipt, SinkMessage, StepRecord } from '../../src/modules/executions/execution-sink';
import { reopenAfterReset } from '../../src/modules/executions/execution.recorder';
import {
  KnowledgeBaseMissingError,
  ModelRejectedError,
  retrieveAnswer,
  rewriteWithModel,
} from '../../src/modules/knowledge-bases/knowledge-base.retrieval';
import {
  type AiResponseNodeSpec,
  type CustomerReply,
  type FormNodeSpec,
  type FormPromptResult,
  formScores,
  formWaitKey,
  HANDOFF_FALLBACK,
  type MessageNodeSpec,
  type MessageTemplateSpec,
  type PromptChoices,
} from '../executions.shared';
import { ExecutionErrorTypes, isChannelErrorType } from '../failure-types';
import { dependencyWaitsFor, type FailurePolicy, type ProviderBudget, runWithFailurePolicy } from '../failures';

export const DEFAULT_CONFIDENCE_THRESHOLD = 0.5;
export const DEFAULT_FALLBACK = "I'm not sure about that one. A teammate will follow up with you shortly.";

/** What an ai_response node did: answered (`response`), or handed the customer to a person (`handed_off`). */
export interface AiResponseResult {
  response?: string;
  confidence: number;
  handed_off?: boolean;
}

/** A failed node's step, as the workflow knows it (the completion records it). */
export interface FailedStepInput {
  nodeId: string;
  type: string;
  startedAt: number;
  input: Record<string, unknown>;
  /** The step's own error type when it says more than the execution's (a channel failure). */
  errorType?: string;
}

export interface MessageRunInput {
  ctx: ExecutionContext;
  /** Consecutive message nodes, in order. */
  nodes: MessageNodeSpec[];
  /** When the run started (workflow time, ms): every node's start. */
  startedAt: number;
  /** The run ends the execution: complete it with this output (and `response`, the last text sent) once all are sent. */
  finishOutput?: Record<string, unknown>;
}

export interface MessageRunResult {
  /** The texts recorded for the run's first nodes, in order (by this attempt or an earlier one). */
  sent: string[];
  /** The execution stopped running (cancelled): nothing more was sent. */
  stopped?: true;
  /** The provider refused the next node's message for good (its error message). */
  rejected?: string;
  /** The refusal's step error type, when a channel's (`channel_unauthorized`, ...). */
  rejectedType?: string;
  /** The execution was completed (`finishOutput`). */
  finished?: true;
}

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

/**
 * Builds the execution activities over `sink`, the only thing they deliver and record
 * through (see execution-sink.ts). The worker builds them twice: with the live sink under
 * the plain names, and with a dry run's sink under DRY_RUN_ACTIVITY_PREFIX names.
 */
export function createExecutionActivities(deps: { services: Services; sink: ExecutionSink }) {
  const { services, sink } = deps;
  const em = () => services.orm.em.fork() as EntityManager;
  const policy: FailurePolicy = {
    waits: dependencyWaitsFor(services.metrics.registry),
    endpoints: endpointsFromConfig(services.config),
    infraRetryMs: infraRetryMsOf(services.config),
  };
  /** The completion must be written: it waits out any outage, however long. */
  const completionPolicy: FailurePolicy = { ...policy, infraRetryMs: Infinity };

  /**
   * A dry run's context must never reach the live sink, nor a live one a dry run's: a
   * workflow that picked the wrong activity names fails at once instead of acting.
   */
  const checkMode = (ctx: ExecutionContext) => {
    if ((ctx.dryRunId !== undefined) !== (sink.mode === 'dry_run')) {
      throw ApplicationFailure.nonRetryable(
        `execution ${ctx.executionId}: ${ctx.dryRunId ? 'dry-run' : 'live'} context refused by the ${sink.mode} activities`,
        ExecutionErrorTypes.validation,
      );
    }
  };

  /**
   * The step an earlier attempt recorded (returned as is), else a check that the execution
   * still runs: one round trip for both.
   */
  const doneOrRunning = async (ctx: ExecutionContext, nodeId: string): Promise<Record<string, unknown> | undefined> => {
    const state = await sink.stepsState(ctx, [nodeId]);
    const output = state.outputs.get(nodeId);
    if (output) return output;
    if (!state.running) throw notRunning(ctx, `node ${nodeId}`);
    return undefined;
  };

  const metrics = serviceMetricsFor(services.metrics.registry);
  /** Counts a conversation this worker finished (live ones only: a dry run is not a conversation). */
  const countFinished = (status: RunCompletion['status']) => {
    if (sink.mode === 'live') metrics.executionsFinished.inc({ status });
  };

  /** Delivers through the sink; a provider's final refusal becomes a non-retryable api error. */
  const deliver = async (ctx: ExecutionContext, msg: SinkMessage): Promise<SendReceipt> => {
    try {
      return (await sink.deliver(ctx, msg)) ?? {};
    } catch (err) {
      metrics.channelDeliveryFailures.inc({ reason: err instanceof ChannelRejectedError ? 'rejected' : 'provider_error' });
      if (err instanceof ChannelRejectedError) throw ApplicationFailure.nonRetryable(err.message, err.errorType ?? ExecutionErrorTypes.api);
      throw new ProviderError('channel', `channel provider: ${(err as Error).message}`, { cause: err });
    }
  };

  /**
   * Sends `text` as the node's message and records the node's step, once (with `completion`,
   * the sink may complete the execution in the same write); says whether the execution still runs.
   */
  const sendAndRecord = async (
    ctx: ExecutionContext,
    step: { nodeId: string; type: string; startedAt: number; input: Record<string, unknown>; output: Record<string, unknown> },
    text: string,
    completion?: RunCompletion,
    template?: MessageNodeSpec['template'],
  ) => {
    const msg: SinkMessage = { dedupeKey: `${ctx.executionId}:${step.nodeId}`, nodeId: step.nodeId, text, ...(template ? { template } : {}) };
    const sent = await deliver(ctx, msg);
    return await sink.recordSentStep(ctx, msg, { ...step, status: 'completed', startedAt: new Date(step.startedAt) }, completion, sent.sentRecord);
  };

  const sendMessageNode = async (ctx: ExecutionContext, node: MessageNodeSpec, startedAt: number, completion?: RunCompletion) =>
    await sendAndRecord(
      ctx,
      { nodeId: node.id, type: 'message', startedAt, input: { content: node.content }, output: { message_sent: node.content } },
      node.content,
      completion,
      node.template,
    );

  /** Records the failed step (if a node failed) and the final status, once; false when the row was final already. */
  const complete = async (ctx: ExecutionContext, completion: RunCompletion, failedStep?: FailedStepInput): Promise<boolean> => {
    const step: StepRecord | undefined = failedStep && {
      ...failedStep,
      status: 'failed',
      startedAt: new Date(failedStep.startedAt),
      output: {},
      ...(completion.errorType ? { errorType: failedStep.errorType ?? completion.errorType } : {}),
      ...(completion.errorMessage ? { errorMessage: completion.errorMessage } : {}),
    };
    const finished = await sink.complete(ctx, completion, step);
    if (finished) countFinished(completion.status);
    afterFinish();
    return finished;
  };
  /** In a run an operator reset (its run id is not its workflow's first), reopens the failed execution first. */
  const takeOverAfterReset = async (ctx: ExecutionContext) => {
    const { runId, firstRunId } = ctx;
    if (sink.mode !== 'live' || runId === undefined || firstRunId === undefined || runId === firstRunId) return;
    await reopenAfterReset(em(), { ...ctx, runId, firstRunId });
  };
  // Crash tests die here: the finish is committed, Temporal has not recorded it, so it runs again.
  const afterFinish = () => failpoint(services.config, 'execution.after_finish');

  const impl = {
    async runMessageNode({ ctx, node, startedAt }: NodeActivityInput<MessageNodeSpec>): Promise<{ message_sent: string }> {
      const done = await doneOrRunning(ctx, node.id);
      if (done) return done as { message_sent: string };
      return (await sendMessageNode(ctx, node, startedAt)).output as { message_sent: string };
    },

    /**
     * A run of consecutive message nodes, and the completion when the run ends the
     * execution (`finishOutput`), as ONE local activity (runs of version 2): one
     * read of what earlier attempts recorded, then each node as `runMessageNode` does it.
     * Each step's write also reads the execution's status, so a cancel that lands between
     * two nodes still stops the next send, with no read in between.
     *
     * It never retries and never fails: at the first error it returns what it sent, and the
     * workflow goes on from that node with `runMessageNode`, under that node's own retries,
     * provider budget and failure classification. The exception is a provider's final
     * refusal (ExecutionApiError), returned as `rejected`, so a refused message is not sent
     * a second time only to be refused again.
     */
    async runMessageRun({ ctx, nodes, startedAt, finishOutput }: MessageRunInput): Promise<MessageRunResult> {
      const sent: string[] = [];
      try {
        const state = await sink.stepsState(ctx, nodes.map((n) => n.id));
        const success = (response: string | null): RunCompletion => ({ status: 'success', output: { response, ...finishOutput } });
        let running = state.running;
        let completed = false;
        for (const [i, node] of nodes.entries()) {
          const done = state.outputs.get(node.id);
          if (done) {
            sent.push((done as { message_sent: string }).message_sent);
            continue;
          }
          if (!running) return { sent, stopped: true };
          // The execution's last node completes it in the same write (one commit less).
          const completion = finishOutput !== undefined && i === nodes.length - 1 ? success(node.content) : undefined;
          // Workflow time for every node, as node-by-node local activities in one task had:
          // a wall-clock start would sort a later form (workflow time) before these steps.
          const r = await sendMessageNode(ctx, node, startedAt, completion);
          sent.push((r.output as { message_sent: string }).message_sent);
          running = r.running;
          completed = r.completed;
        }
        if (finishOutput === undefined) return { sent };
        // Not running any more (cancelled after the last send): the completion is a no-op, as the workflow's own would be.
        if (completed) {
          countFinished('success');
          afterFinish();
        } else await complete(ctx, success(sent.at(-1) ?? null));
        return { sent, finished: true };
      } catch (err) {
        if (err instanceof ApplicationFailure && err.type === ExecutionErrorTypes.api) return { sent, rejected: err.message };
        if (err instanceof ApplicationFailure && isChannelErrorType(err.type)) return { sent, rejected: err.message, rejectedType: err.type as string };
        return { sent };
      }
    },

    async runAiResponseNode({
      ctx,
      node,
      startedAt,
      question,
    }: NodeActivityInput<AiResponseNodeSpec> & { question: string }): Promise<AiResponseResult> {
      const done = await doneOrRunning(ctx, node.id);
      if (done) return done as unknown as AiResponseResult;
      let retrieved;
      try {
        retrieved = await retrieveAnswer(em(), ctx.organizationId, node.knowledge_base, question);
      } catch (err) {
        if (err instanceof KnowledgeBaseMissingError) throw ApplicationFailure.nonRetryable(err.message, ExecutionErrorTypes.validation);
        throw err;
      }
      const threshold = node.confidence_threshold ?? DEFAULT_CONFIDENCE_THRESHOLD;
      const fallbackUsed = retrieved.answer === null || retrieved.confidence < threshold;
      // `fallback: "handoff"`: a person takes over instead (without a customer there is nobody to hand off: the default text).
      if (fallbackUsed && node.fallback === HANDOFF_FALLBACK && ctx.customerId) {
        const output = { confidence: retrieved.confidence, fallback_used: true, handed_off: true, article_ids: retrieved.articleIds, model_used: false };
        const step: StepRecord = {
          nodeId: node.id,
          type: 'ai_response',
          status: 'completed',
          startedAt: new Date(startedAt),
          input: { question, knowledge_base: retrieved.knowledgeBaseId },
          output,
        };
        if ((await sink.handOff(ctx, step)) === 'not_running') throw notRunning(ctx, `handoff of node ${node.id}`);
        return output;
      }
      let response: string;
      if (fallbackUsed) {
        response = node.fallback === undefined || node.fallback === HANDOFF_FALLBACK ? DEFAULT_FALLBACK : node.fallback;
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
      return out.output as unknown as AiResponseResult;
    },

    /**
     * Asks for one form field (attempt n). The wait is opened (committed) before the prompt
     * is sent: a reply that arrives while the send is in flight claims it and reaches this
     * execution instead of starting others.
     */
    async sendFormPrompt(input: {
      ctx: ExecutionContext;
      nodeId: string;
      field: string;
      attempt: number;
      text: string;
      template?: MessageTemplateSpec;
      choices?: PromptChoices;
      /** A phone call's question was said at this time (epoch ms), before this activity ran (VOICE_ASK_AHEAD). */
      askedAt?: number;
    }): Promise<FormPromptResult> {
      const { ctx, nodeId, field, attempt, text, template, choices, askedAt } = input;
      const waitKey = formWaitKey(ctx.executionId, nodeId, field, attempt);
      const opened = await sink.openWait(ctx, { nodeId, field, waitKey });
      if (opened === 'not_running') throw notRunning(ctx, `prompt ${waitKey}`);
      const msg: SinkMessage = {
        dedupeKey: waitKey,
        nodeId,
        text,
        ...(template ? { template } : {}),
        ...(choices ? { choices } : {}),
        ...(askedAt !== undefined ? { saidAt: new Date(askedAt) } : {}),
      };
      const sent = await deliver(ctx, msg);
      await sink.recordPrompt(ctx, msg, sent.sentRecord);
      return sent.windowClosesAt !== undefined ? { windowClosesAt: sent.windowClosesAt } : {};
    },

    /**
     * The form's timeout fired without a reply in the run: closes the wait, unless a reply
     * claimed it first (its signal late or lost), in which case that reply is returned.
     */
    async closeFormWait(input: { ctx: ExecutionContext; nodeId: string; field: string; attempt: number }): Promise<{ reply: CustomerReply | null }> {
      const { ctx, nodeId, field, attempt } = input;
      const waitKey = formWaitKey(ctx.executionId, nodeId, field, attempt);
      const closed = await sink.closeWait(ctx, waitKey);
      if (closed.state === 'not_running') throw notRunning(ctx, `wait ${waitKey}`);
      return { reply: closed.state === 'claimed' ? closed.reply : null };
    },

    async recordFormStep({
      ctx,
      node,
      startedAt,
      answers,
    }: NodeActivityInput<FormNodeSpec> & { answers: Record<string, string> }): Promise<void> {
      const recorded = await sink.recordFormStep(ctx, {
        nodeId: node.id,
        type: 'form',
        status: 'completed',
        startedAt: new Date(startedAt),
        input: { fields: node.fields.map((f) => f.name) },
        output: { form_data: answers, ...scoresOf(node.fields, answers) },
      });
      if (recorded === 'not_running') throw notRunning(ctx, `step ${node.id}`);
    },

    /** Records the failed step (if a node failed) and the final status, once. */
    async completeExecution(input: { ctx: ExecutionContext; completion: RunCompletion; failedStep?: FailedStepInput }): Promise<boolean> {
      return await complete(input.ctx, input.completion, input.failedStep);
    },
  };

  /** Every activity checks the mode first, then runs under its failure policy. */
  const activity =
    <I extends { ctx: ExecutionContext }, O>(body: (i: I) => Promise<O>, budget: ProviderBudget | undefined, p: FailurePolicy = policy) =>
    async (i: I): Promise<O> => {
      checkMode(i.ctx);
      return await runWithFailurePolicy(p, budget, async () => {
        await takeOverAfterReset(i.ctx);
        return await body(i);
      });
    };
  return {
    runMessageNode: activity(impl.runMessageNode, NODE_PROVIDER_BUDGET),
    // Catches its own failures: the policy has nothing to decide (see runMessageRun).
    runMessageRun: activity(impl.runMessageRun, undefined),
    runAiResponseNode: activity(impl.runAiResponseNode, AI_PROVIDER_BUDGET),
    sendFormPrompt: activity(impl.sendFormPrompt, NODE_PROVIDER_BUDGET),
    closeFormWait: activity(impl.closeFormWait, NODE_PROVIDER_BUDGET),
    recordFormStep: activity(impl.recordFormStep, NODE_PROVIDER_BUDGET),
    completeExecution: activity(impl.completeExecution, undefined, completionPolicy),
  };
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
