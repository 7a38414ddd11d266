/**
 * Owns `executionWorkflow`: one run per execution (workflow id = execution id). It walks
 * the nodes of the revision it was started with, from nodes[0] along `next` (a node
 * without `next` ends the execution): `ai_response` is one activity; consecutive `message`
 * nodes are one local activity together in runs of version 2 (with the completion when they
 * end the execution), one local activity each before (MESSAGE_NODES_LOCAL);
 * `form` asks each field, waits durably for the customer's reply (signal
 * `customerReply`, deduplicated by message id) up to the node's timeout, re-asks an
 * invalid reply up to FORM_MAX_ATTEMPTS times, then records the answers. When the timeout
 * fires, `closeFormWait` settles the race with a reply in PostgreSQL: a reply that claimed
 * the prompt's wait first is taken (even if its signal is late), otherwise the wait is
 * closed and the node fails with `timeout`.
 *
 * Every outcome is written by `completeExecution`: success, failed (with error_type
 * timeout | api_error | validation_error; the Temporal run then fails too, so operators
 * see it), or cancelled (cancellation of the run). A node activity that finds the
 * execution already cancelled in PostgreSQL (the cancel did not reach the run in time)
 * stops the run at once, sending nothing; the run then completes with status `cancelled`.
 *
 * Operators see where a run stands without reading its history: the current details
 * (`setCurrentDetails`: `waiting for email (node ask, since 12:03 UTC, times out 12:13 UTC)`,
 * `sending node hi`, `done`) and query `state` (the same as JSON, `ExecutionState`) follow
 * every step; both cost no history event.
 *
 * `runExecution` is the walk itself, shared with dry runs (dry-run.workflow.ts): in mode
 * `dry_run` it calls the same activities under DRY_RUN_ACTIVITY_PREFIX names (built with a
 * sink that sends and counts nothing), takes the form replies from the recorded ones in
 * order instead of waiting, and ends `waiting_for_input` when they run out.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { ExecutionActivities, MessageRunResult } from '../activities/executions.activities';
import {
  type CustomerReply,
  customerReplySignal,
  DEFAULT_FORM_TIMEOUT_SECONDS,
  DRY_RUN_ACTIVITY_PREFIX,
  type ExecutionNodeSpec,
  executionProgressQuery,
  type ExecutionProgress,
  type ExecutionWorkflowInput,
  type ExecutionWorkflowResult,
  FORM_MAX_ATTEMPTS,
  type FormNodeSpec,
  type MessageNodeSpec,
  type RunMode,
  scoreChoices,
  validateFormReply,
} from '../executions.shared';
import { ACTIVITY_DECIDES_RETRY, ChannelErrorTypes, ExecutionErrorTypes, FailureTypes, isChannelErrorType } from '../failure-types';
import { describeState, type ExecutionState, executionStateQuery, summaryLine, withSummary } from '../summaries.shared';
import { CALLER_HUNG_UP, normalizeSpokenReply } from '../voice.shared';
import { VoiceCall } from './voice-call';

const NON_RETRYABLE = [ExecutionErrorTypes.validation, ExecutionErrorTypes.api, ExecutionErrorTypes.notRunning];

/** Runs started before the input carried it wait out infrastructure outages for this long. */
const DEFAULT_INFRA_RETRY_MS = 3_600_000;
/** Beyond the infrastructure budget: room for the last attempts (a hung attempt still ends). */
const SCHEDULE_MARGIN_MS = 600_000;

/** The same activity proxy under `prefix`ed activity names (a dry run's activities). */
function renamed<A extends object>(acts: A, prefix: string): A {
  if (prefix === '') return acts;
  return new Proxy(acts, { get: (target, name) => Reflect.get(target, typeof name === 'string' ? prefix + name : name) });
}

/**
 * Node activities decide their own retries (temporal/failures.ts): an outage of our own
 * PostgreSQL or Redis is waited out for the configured hours, a provider error gets the
 * node's bounded budget. The policy here only sets no limit; schedule-to-close bounds a
 * node that keeps timing out (a hung database) to the same hours.
 */
function nodeActivities(infraRetryMs: number, prefix: string) {
  const scheduleToCloseTimeout = infraRetryMs + SCHEDULE_MARGIN_MS;
  const retry = { ...ACTIVITY_DECIDES_RETRY, nonRetryableErrorTypes: NON_RETRYABLE };
  return {
    /** A send is seconds. */
    nodeActs: renamed(proxyActivities<ExecutionActivities>({ startToCloseTimeout: '10 seconds', scheduleToCloseTimeout, retry }), prefix),
    /** ai_response may wait on a model endpoint. */
    aiActs: renamed(proxyActivities<ExecutionActivities>({ startToCloseTimeout: '45 seconds', scheduleToCloseTimeout, retry }), prefix),
    /**
     * message nodes since MESSAGE_NODES_LOCAL: local activities, same timeouts and retries.
     * A run of message nodes and the completion then take one workflow task instead of a
     * task-queue round trip and a workflow task each. What a crash does: docs/executions.md.
     */
    localNodeActs: renamed(proxyLocalActivities<ExecutionActivities>({ startToCloseTimeout: '10 seconds', scheduleToCloseTimeout, retry }), prefix),
  };
}

/**
 * Patch id: message nodes run as local activities. Runs whose history has no marker (started
 * before it) keep replaying their task-queue activities.
 */
export const MESSAGE_NODES_LOCAL = 'message-nodes-local-activities';

/**
 * Patch id: a phone call's question goes to the caller before its prompt activity runs. The
 * activity records the prompt and opens the form's wait in PostgreSQL: a caller is still
 * hearing the question (seconds) when it is done, so the voice turn answers in the workflow
 * task that reached the question instead of after the activity's round trip and one more
 * workflow task. Calls whose history has no marker replay the old order.
 */
export const VOICE_ASK_AHEAD = 'voice-ask-before-prompt-activity';

/** A send is seconds: a run gets a node's timeout per node. It is not retried (see runMessageRun). */
function messageRunActivities(nodes: number, prefix: string) {
  return renamed(proxyLocalActivities<ExecutionActivities>({ startToCloseTimeout: 10_000 * nodes, retry: { maximumAttempts: 1 } }), prefix);
}

const nextNode = (node: ExecutionNodeSpec, byId: Map<string, ExecutionNodeSpec>) => (node.next === undefined ? undefined : byId.get(node.next));

/** The message nodes from `first` on, up to the first node of another type or the end. */
function messageRunFrom(first: MessageNodeSpec, byId: Map<string, ExecutionNodeSpec>): MessageNodeSpec[] {
  const run = [first];
  for (let n = nextNode(first, byId); n?.type === 'message'; n = nextNode(n, byId)) run.push(n);
  return run;
}

/**
 * The final write must happen: retried until the database takes it, however long an
 * outage lasts (its activity never gives up on infrastructure). A local activity: one
 * short transaction, so it skips a task-queue round trip (about a third of an execution's
 * scheduling cost) and its result is still recorded in history as a marker.
 */
const finishActivities = proxyLocalActivities<ExecutionActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', nonRetryableErrorTypes: [] },
});

type ErrorType = NonNullable<ExecutionWorkflowResult['errorType']>;

class NodeFailure extends Error {
  constructor(
    readonly node: ExecutionNodeSpec,
    readonly startedAt: number,
    readonly errorType: ErrorType,
    message: string,
    /** The failed step's own error type (a channel failure: `channel_unauthorized`, ...). */
    readonly stepErrorType?: string,
  ) {
    super(message);
  }
}

/** The execution was finished outside the run (cancelled through the API): stop, record nothing. */
class ExecutionStopped extends Error {}

/** An ai_response node below its threshold handed the customer to a person (`fallback: "handoff"`): the execution ends. */
class HandedOff extends Error {}

/** A dry run reached a form with no recorded reply left: where the recorded conversation stops. */
class RepliesExhausted extends Error {
  constructor(
    readonly node: ExecutionNodeSpec,
    readonly field: string,
  ) {
    super(`no recorded reply left for "${field}"`);
  }
}

/**
 * What an activity failed with: a task-queue activity's failure arrives as an ActivityFailure
 * around it, a local activity's (message nodes) as the failure itself.
 */
const activityCause = (err: unknown): unknown => (err instanceof ActivityFailure ? err.cause : err);

const isNotRunning = (err: unknown): boolean => {
  const cause = activityCause(err);
  return cause instanceof ApplicationFailure && cause.type === ExecutionErrorTypes.notRunning;
};

function classify(err: unknown): { errorType: ErrorType; message: string; stepErrorType?: string } {
  const cause = activityCause(err);
  if (cause instanceof ApplicationFailure) {
    if (isChannelErrorType(cause.type)) return { errorType: 'api_error', message: cause.message, stepErrorType: cause.type as string };
    if (cause.type === ExecutionErrorTypes.validation) return { errorType: 'validation_error', message: cause.message };
    // Our own infrastructure stayed away longer than the configured hours: we gave up waiting.
    if (cause.type === FailureTypes.dependencyUnavailable) return { errorType: 'timeout', message: cause.message };
    return { errorType: 'api_error', message: cause.message };
  }
  if (cause instanceof TimeoutFailure) return { errorType: 'timeout', message: 'a node activity timed out' };
  if (err instanceof ActivityFailure) return { errorType: 'api_error', message: (cause as Error | undefined)?.message ?? err.message };
  return { errorType: 'api_error', message: err instanceof Error ? err.message : String(err) };
}

function nodeInput(node: ExecutionNodeSpec, question: string): Record<string, unknown> {
  if (node.type === 'message') return { content: node.content };
  if (node.type === 'ai_response') return { question, knowledge_base: node.knowledge_base };
  return { fields: node.fields.map((f) => f.name) };
}

export async function executionWorkflow(input: ExecutionWorkflowInput): Promise<ExecutionWorkflowResult> {
  return await runExecution(input, { kind: 'live' });
}

export async function runExecution(input: ExecutionWorkflowInput, mode: RunMode): Promise<ExecutionWorkflowResult> {
  // A phone call's execution also answers the voice hook's turns (voice-call.ts). A call is
  // what the voice hook started (its input names the CallSid): a voice-channel conversation
  // sent through POST /v1/messages keeps its replies as typed and its provider delivery.
  const isCall = input.channel === 'voice' && typeof input.input?.call_sid === 'string';
  const voice = mode.kind === 'live' && isCall ? new VoiceCall() : undefined;
  try {
    return await walk(input, mode, voice);
  } finally {
    // Cancelled: nothing more to answer.
    if (voice) await voice.finish().catch(() => undefined);
  }
}

async function walk(input: ExecutionWorkflowInput, mode: RunMode, voice: VoiceCall | undefined): Promise<ExecutionWorkflowResult> {
  // The one switch of a dry run: other activity names (another sink), a context they accept, recorded replies.
  const prefix = mode.kind === 'dry_run' ? DRY_RUN_ACTIVITY_PREFIX : '';
  const { nodeActs, aiActs, localNodeActs } = nodeActivities(input.infraRetryMs ?? DEFAULT_INFRA_RETRY_MS, prefix);
  const finishActs = renamed(finishActivities, prefix);
  const ctx = {
    executionId: input.executionId,
    organizationId: input.organizationId,
    workflowId: input.workflowId,
    channel: input.channel,
    customerId: input.customerId,
    // A live run names itself: a run an operator started by a reset is not its workflow's first (the activities reopen the execution).
    ...(mode.kind === 'dry_run' ? { dryRunId: mode.dryRunId } : { runId: workflowInfo().runId, firstRunId: workflowInfo().firstExecutionRunId }),
  };
  const replies: CustomerReply[] = mode.kind === 'dry_run' ? [...mode.replies] : [];
  const seenReplies = new Set<string>();
  const progress: ExecutionProgress = { nodeId: null, waitingForInput: false, stepsCompleted: 0 };
  const acceptReply = (reply: CustomerReply) => {
    if (seenReplies.has(reply.messageId)) return;
    seenReplies.add(reply.messageId);
    replies.push(reply);
  };
  setHandler(customerReplySignal, acceptReply);
  setHandler(executionProgressQuery, () => progress);
  /** A call's question is with the caller while its prompt activity still runs (VOICE_ASK_AHEAD). */
  let askedAhead = false;
  voice?.install(acceptReply, () => (progress.waitingForInput || askedAhead) && replies.length === 0);
  // Where the run stands, for operators: the UI's current details and query `state` say the same.
  let state: ExecutionState = { phase: 'starting', node_id: null, node_type: null, steps_completed: 0 };
  const enter = (next: Omit<ExecutionState, 'steps_completed'>) => {
    state = { ...next, steps_completed: progress.stepsCompleted };
    setCurrentDetails(describeState(state));
  };
  setHandler(executionStateQuery, () => ({ ...state, steps_completed: progress.stepsCompleted }));
  setCurrentDetails(describeState(state));

  const byId = new Map(input.nodes.map((n) => [n.id, n]));
  // Runs started before version 2 keep walking node by node (their histories say so).
  const messageRuns = (input.version ?? 1) >= 2;
  /** The customer's latest text: what ai_response answers. */
  let lastCustomerText = typeof input.input.message === 'string' ? input.input.message : '';
  let lastResponse: string | null = null;
  const formData: Record<string, Record<string, string>> = {};

  /** Waits for the reply to prompt `attempt` up to the timeout; then settles a late claim in PostgreSQL. */
  const awaitReply = async (node: FormNodeSpec, field: string, attempt: number, timeoutMs: number): Promise<boolean> => {
    if (await condition(() => replies.length > 0 || voice?.hungUp === true, timeoutMs) && replies.length > 0) return true;
    // The reply may have claimed the wait in PostgreSQL with its signal still on the way.
    const late = await withSummary(nodeActs.closeFormWait, `node ${node.id} · form · ${field} · close wait`, { ctx, nodeId: node.id, field, attempt });
    if (late.reply && !seenReplies.has(late.reply.messageId)) {
      seenReplies.add(late.reply.messageId);
      replies.push(late.reply);
    }
    return replies.length > 0;
  };

  const collectForm = async (node: FormNodeSpec, startedAt: number) => {
    const timeoutMs = (node.timeout_seconds ?? DEFAULT_FORM_TIMEOUT_SECONDS) * 1000;
    const answers: Record<string, string> = {};
    for (const field of node.fields) {
      let prompt = field.label;
      // Offered as a list where the channel has them (WhatsApp); the answer arrives as text either way.
      const choices = scoreChoices(field);
      for (let attempt = 1; ; attempt++) {
        enter({ phase: 'sending', node_id: node.id, node_type: 'form', field: field.name, attempt });
        askedAhead = voice !== undefined && patched(VOICE_ASK_AHEAD);
        if (askedAhead) voice?.ask(prompt, field, node.voice);
        const sent = await withSummary(nodeActs.sendFormPrompt, summaryLine(`node ${node.id}`, 'form', field.name, attempt > 1 && `attempt ${attempt}`), {
          ctx,
          nodeId: node.id,
          field: field.name,
          attempt,
          text: prompt,
          ...(node.template ? { template: node.template } : {}),
          ...(choices ? { choices } : {}),
          // The workflow's clock: the time of the task that asked, before the caller's answer.
          ...(askedAhead ? { askedAt: Date.now() } : {}),
        });
        if (!askedAhead) voice?.ask(prompt, field, node.voice);
        progress.waitingForInput = true;
        const since = Date.now();
        // Meta refuses our replies once the customer service window closes: without a template to re-open the conversation, the wait ends there.
        const closesAt = node.template ? undefined : sent?.windowClosesAt;
        // At least 1 ms: condition() with a timeout of 0 would wait forever.
        const waitMs = closesAt !== undefined && closesAt - since < timeoutMs ? Math.max(1, closesAt - since) : timeoutMs;
        enter({
          phase: 'waiting',
          node_id: node.id,
          node_type: 'form',
          field: field.name,
          attempt,
          waiting_since: new Date(since).toISOString(),
          times_out_at: new Date(since + waitMs).toISOString(),
        });
        // A dry run never waits: it has the recorded replies or nothing.
        const got = mode.kind === 'dry_run' ? replies.length > 0 : await awaitReply(node, field.name, attempt, waitMs);
        progress.waitingForInput = false;
        askedAhead = false;
        enter({ phase: 'running', node_id: node.id, node_type: 'form', field: field.name, attempt });
        if (!got && mode.kind === 'dry_run') throw new RepliesExhausted(node, field.name);
        if (!got && voice?.hungUp) throw new NodeFailure(node, startedAt, 'timeout', `the caller hung up before answering "${field.name}"`, CALLER_HUNG_UP);
        if (!got && waitMs < timeoutMs) {
          throw new NodeFailure(
            node,
            startedAt,
            'api_error',
            `no reply for "${field.name}" before the customer service window closed (${new Date(since + waitMs).toISOString()}); give the form a template to wait longer`,
            ChannelErrorTypes.windowClosed,
          );
        }
        if (!got) throw new NodeFailure(node, startedAt, 'timeout', `no reply for "${field.name}" within ${timeoutMs / 1000} s`);
        const reply = replies.shift()!;
        lastCustomerText = reply.text;
        // Speech recognition spells out what a keyboard would type ("john at example dot com").
        const checked = validateFormReply(field, voice ? normalizeSpokenReply(field.type, reply.text) : reply.text);
        if ('value' in checked) {
          answers[field.name] = checked.value;
          break;
        }
        if (attempt >= FORM_MAX_ATTEMPTS) {
          throw new NodeFailure(node, startedAt, 'validation_error', `"${field.name}": ${checked.problem} (${attempt} attempts)`);
        }
        prompt = `${checked.problem}. ${field.label}`;
      }
    }
    await withSummary(nodeActs.recordFormStep, `node ${node.id} · form · record answers`, { ctx, node, startedAt, answers });
    formData[node.id] = answers;
  };

  const finish = (result: ExecutionWorkflowResult, failedStep?: { node: ExecutionNodeSpec; startedAt: number; errorType?: string | undefined }) =>
    CancellationScope.nonCancellable(() =>
      withSummary(finishActs.completeExecution, `complete · ${result.status}`, {
        ctx,
        completion: {
          status: result.status,
          output: result.output,
          ...(result.errorType ? { errorType: result.errorType } : {}),
          ...(result.errorMessage ? { errorMessage: result.errorMessage } : {}),
        },
        ...(failedStep
          ? {
              failedStep: {
                nodeId: failedStep.node.id,
                type: failedStep.node.type,
                startedAt: failedStep.startedAt,
                input: nodeInput(failedStep.node, lastCustomerText),
                ...(failedStep.errorType ? { errorType: failedStep.errorType } : {}),
              },
            }
          : {}),
      }),
    );

  const output = (nextAction: string): Record<string, unknown> => ({
    response: lastResponse,
    next_action: nextAction,
    ...(Object.keys(formData).length > 0 ? { form_data: formData } : {}),
  });
  const withoutResponse = ({ response: _response, ...rest }: Record<string, unknown>) => rest;


  /**
   * Runs the message nodes from `first` on as one local activity; returns the node to go
   * on from (undefined: the end), or `finished` when the activity also completed the run.
   * What it did not get to, the node-by-node path does next.
   */
  const runMessages = async (first: MessageNodeSpec, startedAt: number): Promise<{ finished: true } | { next: ExecutionNodeSpec | undefined; alone: boolean }> => {
    const run = messageRunFrom(first, byId);
    const last = run[run.length - 1]!;
    let result: MessageRunResult;
    try {
      result = await withSummary(messageRunActivities(run.length, prefix).runMessageRun, `nodes ${run.map((n) => n.id).join(', ')} · message`, {
        ctx,
        nodes: run,
        startedAt,
        ...(last.next === undefined ? { finishOutput: withoutResponse(output('end')) } : {}),
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // Timed out or lost: the node-by-node path finds what it recorded.
      result = { sent: [] };
    }
    for (const [i, text] of result.sent.entries()) {
      voice?.say(text, run[i]!.voice);
      lastResponse = text;
      progress.stepsCompleted++;
    }
    if (result.stopped) throw new ExecutionStopped();
    if (result.finished) return { finished: true };
    const stoppedAt = run[result.sent.length];
    if (stoppedAt === undefined) return { next: nextNode(last, byId), alone: false };
    if (result.rejected !== undefined) throw new NodeFailure(stoppedAt, startedAt, 'api_error', result.rejected, result.rejectedType);
    return { next: stoppedAt, alone: true };
  };

  try {
    let node: ExecutionNodeSpec | undefined = input.nodes[0];
    // Set for the node a run stopped at: it runs on its own, under its own retries.
    let alone = false;
    while (node !== undefined) {
      const current: ExecutionNodeSpec = node;
      progress.nodeId = current.id;
      enter({ phase: current.type === 'message' ? 'sending' : 'running', node_id: current.id, node_type: current.type });
      const startedAt = Date.now();
      try {
        if (current.type === 'message' && !alone && messageRuns) {
          const went = await runMessages(current, startedAt);
          if ('finished' in went) {
            enter({ phase: 'success', node_id: state.node_id, node_type: state.node_type });
            return { status: 'success', output: output('end') };
          }
          ({ next: node, alone } = went);
          continue;
        }
        if (current.type === 'message') {
          // Version 2 runs never consult the patch: they get here only for a node a run stopped at.
          const acts = messageRuns || patched(MESSAGE_NODES_LOCAL) ? localNodeActs : nodeActs;
          lastResponse = (await withSummary(acts.runMessageNode, `node ${current.id} · message`, { ctx, node: current, startedAt })).message_sent;
          voice?.say(lastResponse, current.voice);
        } else if (current.type === 'ai_response') {
          const ai = await withSummary(aiActs.runAiResponseNode, `node ${current.id} · ai_response · ${current.knowledge_base}`, {
            ctx,
            node: current,
            startedAt,
            question: lastCustomerText,
          });
          if (ai.handed_off) throw new HandedOff();
          lastResponse = ai.response ?? null;
          if (lastResponse !== null) voice?.say(lastResponse, current.voice);
        } else {
          await collectForm(current, startedAt);
        }
      } catch (err) {
        if (isCancellation(err) || err instanceof NodeFailure || err instanceof RepliesExhausted || err instanceof ExecutionStopped || err instanceof HandedOff) throw err;
        if (isNotRunning(err)) throw new ExecutionStopped();
        const { errorType, message, stepErrorType } = classify(err);
        throw new NodeFailure(current, startedAt, errorType, message, stepErrorType);
      }
      progress.stepsCompleted++;
      alone = false;
      node = nextNode(current, byId);
    }
  } catch (err) {
    if (isCancellation(err)) {
      enter({ phase: 'cancelled', node_id: state.node_id, node_type: state.node_type });
      await finish({ status: 'cancelled', output: output('cancelled') });
      throw err;
    }
    // The row is already final (cancelled by the API); nothing to write, nothing more to send.
    if (err instanceof ExecutionStopped) {
      enter({ phase: 'cancelled', node_id: state.node_id, node_type: state.node_type });
      return { status: 'cancelled', output: output('cancelled') };
    }
    // An ai_response node handed the customer to a person: the execution ends, cancelled with the outcome handed_off.
    if (err instanceof HandedOff) {
      progress.stepsCompleted++;
      const result: ExecutionWorkflowResult = { status: 'cancelled', output: output('handed_off') };
      enter({ phase: 'cancelled', node_id: state.node_id, node_type: state.node_type });
      await finish(result);
      return result;
    }
    if (err instanceof RepliesExhausted) {
      const result: ExecutionWorkflowResult = {
        status: 'waiting_for_input',
        output: { ...output('wait_for_input'), node_id: err.node.id, field: err.field },
      };
      enter({ phase: 'waiting_for_input', node_id: err.node.id, node_type: err.node.type, field: err.field });
      await finish(result);
      return result;
    }
    if (err instanceof NodeFailure) {
      const result: ExecutionWorkflowResult = {
        status: 'failed',
        output: output('end'),
        errorType: err.errorType,
        errorMessage: err.message,
      };
      enter({ phase: 'failed', node_id: err.node.id, node_type: err.node.type, error_type: err.errorType });
      await finish(result, { node: err.node, startedAt: err.startedAt, errorType: err.stepErrorType });
      // Fail the Temporal run too, so the Temporal UI shows what the API shows.
      throw ApplicationFailure.nonRetryable(`node ${err.node.id} failed: ${err.message}`, err.errorType, result);
    }
    throw err;
  }
  const result: ExecutionWorkflowResult = { status: 'success', output: output('end') };
  enter({ phase: 'success', node_id: state.node_id, node_type: state.node_type });
  await finish(result);
  return result;
}
