/**
 * Owns the one seam through which the execution activities act on the world: delivery to
 * the customer and every write an execution makes (steps, transcript, form waits, the
 * completion, with their webhook events and, through the row triggers, the analytics).
 *
 * The live sink is the send function the worker's composition hands it (channels) plus the
 * recorder. A dry run's sink
 * (src/modules/dry-runs/dry-run.sink.ts) delivers nothing and writes only the dry run's own
 * tables. `createExecutionActivities` receives one sink and imports neither the adapter
 * nor the recorder, so an activity (a new node type included) has no other way to send or
 * record: the "no side effects" mode is decided here, once, by which sink is passed.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { hotExecutor, type SqlFragment, type SqlRunner } from '../../db/hot-query';
import type { Services } from '../../services';
import type { MessageTemplateSpec, PromptChoices } from '../../../temporal/executions.shared';
import {
  clearWaiting,
  closeWait,
  type CloseWaitResult,
  type Completion,
  type ExecutionContext,
  finishExecution,
  insertStep,
  loadStepsState,
  openWait,
  type OpenWaitResult,
  recordSentStep,
  type StepRecord,
  storeOutboundMessage,
} from './execution.recorder';

export type { CloseWaitResult, ExecutionContext, OpenWaitResult, StepRecord };

/** A node's outbound message; `dedupeKey` is stable across activity retries. */
export interface SinkMessage {
  dedupeKey: string;
  nodeId: string;
  text: string;
  /** A message node's WhatsApp template, for outside the 24-hour window. */
  template?: MessageTemplateSpec;
  /** A scored form field's answers, offered as a list where the channel has them (WhatsApp). */
  choices?: PromptChoices;
  /** When a phone call's caller was asked it (the workflow's time), ahead of this write: the transcript's time. */
  saidAt?: Date;
}

/** How a run ends. `waiting_for_input` only in a dry run: its recorded replies ran out. */
export interface RunCompletion extends Omit<Completion, 'status'> {
  status: Completion['status'] | 'waiting_for_input';
}

/**
 * What a send says back: when the customer service window closes, if the connection has one
 * (a form's wait then ends before it closes).
 */
export interface SendReceipt {
  windowClosesAt?: number;
  /**
   * The channel's record of what it sent (`channel_deliveries`, owned by channels), for the
   * step's or prompt's write to commit in its own statement: one round trip and one commit
   * fewer a send.
   */
  sentRecord?: SqlFragment;
}

export interface ExecutionSink {
  readonly mode: 'live' | 'dry_run';
  /** The steps among `nodeIds` that earlier attempts recorded (their outputs, as stored), and whether the execution still runs. */
  stepsState(ctx: ExecutionContext, nodeIds: string[]): Promise<{ running: boolean; outputs: Map<string, Record<string, unknown>> }>;
  /**
   * Sends one message to the customer, outside the service. Throws the provider's errors as
   * they come. Says when the customer service window closes if the connection has one.
   */
  deliver(ctx: ExecutionContext, msg: SinkMessage): Promise<SendReceipt | void>;
  /**
   * Records a sent node message and the node's completed step, once; returns the step's
   * stored output, and whether the execution still ran as it was written (what the next
   * node of a run checks before sending). With `completion` (the execution's last node) the
   * sink may complete the execution in the same write: `completed` says it did (or found it
   * final already); otherwise the caller completes it.
   */
  recordSentStep(
    ctx: ExecutionContext,
    msg: SinkMessage,
    step: StepRecord,
    completion?: RunCompletion,
    sentRecord?: SqlFragment,
  ): Promise<{ output: Record<string, unknown>; running: boolean; completed: boolean }>;
  /** Opens the wait of a form prompt (before the prompt is sent). */
  openWait(ctx: ExecutionContext, w: { nodeId: string; field: string; waitKey: string }): Promise<OpenWaitResult>;
  /** Records a sent form prompt in the transcript, once (with the channel's `sentRecord`). */
  recordPrompt(ctx: ExecutionContext, msg: SinkMessage, sentRecord?: SqlFragment): Promise<void>;
  /** Closes a wait whose timeout fired, unless a reply claimed it first. */
  closeWait(ctx: ExecutionContext, waitKey: string): Promise<CloseWaitResult>;
  /** Records a form's completed step and clears the wait; `not_running` if the execution stopped meanwhile. */
  recordFormStep(ctx: ExecutionContext, step: StepRecord): Promise<'recorded' | 'not_running'>;
  /**
   * Hands the execution's customer to a person (an ai_response node below its threshold with
   * `fallback: "handoff"`), then records the node's step, once; `not_running` if the execution stopped.
   */
  handOff(ctx: ExecutionContext, step: StepRecord): Promise<'handed_off' | 'not_running'>;
  /** Records the failed step (if any) and the final status, once; false when already finished. */
  complete(ctx: ExecutionContext, completion: RunCompletion, failedStep?: StepRecord): Promise<boolean>;
}

/** Only a dry run runs out of recorded replies; a live form waits (and times out) instead. */
function finalCompletion(ctx: ExecutionContext, completion: RunCompletion): Completion {
  const { status } = completion;
  if (status === 'waiting_for_input') throw new Error(`execution ${ctx.executionId}: waiting_for_input is not a final status`);
  // Only a run finishes through this sink: that proves its start (see Completion.byRun).
  return { ...completion, status, byRun: true };
}

/**
 * What the live sink does outside executions' own tables, handed in by the worker's
 * composition (temporal/activities/index.ts), so executions imports neither channels nor
 * handoffs (both sit above it).
 */
export interface LiveSinkWiring {
  /** Sends a node's message to the customer (channels/channel-delivery.ts, `executionSender`). */
  send: ExecutionSink['deliver'];
  /** Hands the execution's customer to a person (handoffs/handoff.service.ts, `startHandoff`). */
  handOff(ctx: ExecutionContext & { customerId: string }): Promise<void>;
}

/** Real delivery and the real records: what every execution of a customer's conversation uses. */
export function liveExecutionSink(services: Services, wiring: LiveSinkWiring): ExecutionSink {
  const em = () => services.orm.em.fork() as EntityManager;
  // A run's single statements (not its transactions) go through the hot pool: db/hot-query.ts.
  const hot = hotExecutor(services.hotPool);

  return {
    mode: 'live',

    async stepsState(ctx, nodeIds) {
      const state = await loadStepsState(hot, ctx.executionId, nodeIds);
      return { running: state.status === 'running', outputs: state.outputs };
    },

    deliver: (ctx, msg) => wiring.send(ctx, msg),

    async recordSentStep(ctx, msg, step, completion, sentRecord) {
      const r = await recordSentStep(hot, ctx, msg, step, completion && finalCompletion(ctx, completion), sentRecord);
      return { output: r.inserted ? step.output : (r.earlierOutput ?? step.output), running: r.status === 'running', completed: completion !== undefined };
    },

    async openWait(ctx, w) {
      return await em().transactional((tx) => openWait(tx as EntityManager, ctx, w));
    },

    async recordPrompt(ctx, msg, sentRecord) {
      await storeOutboundMessage(hot, ctx, msg, sentRecord);
    },

    async closeWait(ctx, waitKey) {
      return await em().transactional((tx) => closeWait(tx as EntityManager, ctx, waitKey));
    },

    async recordFormStep(ctx, step) {
      return await em().transactional(async (tx) => {
        // Locked, so a cancel cannot slip in between the check and the step.
        const [exec] = await tx.execute<Array<{ status: string }>>('select status from executions where id = ? for update', [ctx.executionId]);
        if (exec?.status !== 'running') return 'not_running' as const;
        await insertStep(tx as EntityManager, ctx, step);
        await clearWaiting(tx as EntityManager, ctx);
        return 'recorded' as const;
      });
    },

    async handOff(ctx, step) {
      // The handoff first: a retry after a crash between the two finds it in force and keeps it.
      await wiring.handOff({ ...ctx, customerId: ctx.customerId! });
      return (await this.recordFormStep(ctx, step)) === 'recorded' ? 'handed_off' : 'not_running';
    },

    async complete(ctx, completion, failedStep) {
      const final = finalCompletion(ctx, completion);
      const finish = (e: SqlRunner) => finishExecution(e, ctx.executionId, final);
      if (!failedStep) return await finish(hot);
      return await em().transactional(async (tx) => {
        await insertStep(tx as EntityManager, ctx, failedStep);
        return await finish(tx as EntityManager);
      });
    },
  };
}
