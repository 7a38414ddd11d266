/**
 * Owns the voice hook's calls to Temporal: a call's turns are Temporal Updates on its
 * execution's run (temporal/voice.shared.ts). The first request starts the run and takes its
 * first turn in one call (update-with-start, the run's usual start options, so a second
 * start is a no-op); each later request is an update on the run. A turn is bounded by
 * VOICE_ANSWER_BUDGET_MS: past it, the call is aborted and the hook answers with a pause and
 * a redirect; the next request takes the turn again from the same cursor, so nothing is
 * lost or said twice.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { EXECUTION_WORKFLOW_TYPE, executionWorkflowId } from '../../../../../temporal/executions.shared';
import { callEndedSignal, type VoiceTurnInput, type VoiceTurnResult, voiceTurnUpdate } from '../../../../../temporal/voice.shared';
import { boundedTemporalCall } from '../../../../temporal-calls';
import type { Services } from '../../../../services';
import type { EntityManager } from '@mikro-orm/postgresql';
import { EXECUTION_START, type PendingExecution } from '../../../executions/execution.starter';
import { stampStarted } from '../../../executions/start-stamps';
import { workflowStartOptions } from '../../../starts/durable-start';

export type TurnOutcome =
  /** The run reached a wait or its end in time. */
  | { kind: 'answer'; result: VoiceTurnResult }
  /** Not in time (or Temporal unreachable): pause and redirect. */
  | { kind: 'late' }
  /** No run takes updates any more (it completed): the transcript tells the rest. */
  | { kind: 'closed' };

export async function takeTurn(services: Services, executionId: string, turn: VoiceTurnInput, start?: PendingExecution): Promise<TurnOutcome> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), services.config.VOICE_ANSWER_BUDGET_MS);
  const { client } = services.temporal;
  try {
    const result = await services.temporal.connection.withAbortSignal(abort.signal, async () => {
      if (!start) return await client.workflow.getHandle(executionWorkflowId(executionId)).executeUpdate(voiceTurnUpdate, { args: [turn] });
      const startWorkflowOperation = new WithStartWorkflowOperation(EXECUTION_WORKFLOW_TYPE, workflowStartOptions(services, EXECUTION_START, start));
      const r = await client.workflow.executeUpdateWithStart(voiceTurnUpdate, { args: [turn], startWorkflowOperation });
      await stampStarted(services.orm.em.fork() as EntityManager, executionId);
      return r;
    });
    return { kind: 'answer', result };
  } catch (err) {
    if (abort.signal.aborted) return { kind: 'late' };
    if (err instanceof WorkflowNotFoundError) return { kind: 'closed' };
    // Temporal unreachable, or the run refused the update: the caller hears a pause and the next request tries again.
    services.logger.warn({ err, execution_id: executionId }, 'voice turn failed; answering with a redirect');
    return { kind: 'late' };
  } finally {
    clearTimeout(timer);
  }
}

/** Tells the run the caller is gone (a waiting form ends with `caller_hung_up`); a run already over needs nothing. */
export async function signalCallEnded(services: Services, executionId: string, status: string): Promise<void> {
  await boundedTemporalCall(
    services,
    () => services.temporal.client.workflow.getHandle(executionWorkflowId(executionId)).signal(callEndedSignal, { status }),
    (err) => err instanceof WorkflowNotFoundError,
  );
}
