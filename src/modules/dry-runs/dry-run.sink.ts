/**
 * Owns a dry run's ExecutionSink: the execution activities built with it (registered
 * under DRY_RUN_ACTIVITY_PREFIX names) deliver nothing to any channel and write only the
 * dry run's own rows: `dry_run_steps`, `dry_run_messages` and the item's outcome and diff.
 * Never `executions`, `execution_steps`, `messages`, `customers` or `events`: no webhook
 * event is emitted, and the analytics row triggers on those tables never fire.
 *
 * Writes are keyed like the live ones (a step per node, a message per dedupe key), so an
 * activity retried after a worker crash records nothing twice.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Services } from '../../services';
import type { ExecutionContext, ExecutionSink, SinkMessage, StepRecord } from '../executions/execution-sink';
import { diffRuns } from './dry-run.diff';
import { loadRecordedRun, loadDryRunRecord } from './dry-run.records';

function dryRunIdOf(ctx: ExecutionContext): string {
  if (!ctx.dryRunId) throw new Error(`execution ${ctx.executionId}: a dry run's sink needs a dry-run context`);
  return ctx.dryRunId;
}

async function insertStep(em: EntityManager, ctx: ExecutionContext, step: StepRecord): Promise<void> {
  await em.execute(
    `insert into dry_run_steps (dry_run_id, execution_id, node_id, type, status, input, output, error_type, error_message, started_at)
     values (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?)
     on conflict (dry_run_id, execution_id, node_id) do nothing`,
    [
      dryRunIdOf(ctx),
      ctx.executionId,
      step.nodeId,
      step.type,
      step.status,
      JSON.stringify(step.input),
      JSON.stringify(step.output),
      step.errorType ?? null,
      step.errorMessage ?? null,
      step.startedAt,
    ],
  );
}

/** As the live transcript: nothing without a customer (an execution started without one has no conversation). */
async function insertMessage(em: EntityManager, ctx: ExecutionContext, msg: SinkMessage): Promise<void> {
  if (!ctx.customerId) return;
  await em.execute(
    `insert into dry_run_messages (dry_run_id, execution_id, dedupe_key, node_id, text) values (?, ?, ?, ?, ?)
     on conflict (dry_run_id, dedupe_key) do nothing`,
    [dryRunIdOf(ctx), ctx.executionId, msg.dedupeKey, msg.nodeId, msg.text],
  );
}

async function stepOutputs(em: EntityManager, ctx: ExecutionContext, nodeIds: string[]): Promise<Map<string, Record<string, unknown>>> {
  const rows = await em.execute<Array<{ node_id: string; output: Record<string, unknown> }>>(
    'select node_id, output from dry_run_steps where dry_run_id = ? and execution_id = ? and node_id in (select jsonb_array_elements_text(?::jsonb))',
    [dryRunIdOf(ctx), ctx.executionId, JSON.stringify(nodeIds)],
  );
  return new Map(rows.map((r) => [r.node_id, r.output]));
}

export function dryRunExecutionSink(services: Services): ExecutionSink {
  const em = () => services.orm.em.fork() as EntityManager;
  return {
    mode: 'dry_run',

    // A dry run cannot be cancelled node by node: it always "runs".
    async stepsState(ctx, nodeIds) {
      return { running: true, outputs: await stepOutputs(em(), ctx, nodeIds) };
    },

    async deliver() {
      // Nothing leaves the service: the message is only recorded in the dry run's transcript.
    },

    async recordSentStep(ctx, msg, step) {
      await em().transactional(async (tx) => {
        await insertMessage(tx as EntityManager, ctx, msg);
        await insertStep(tx as EntityManager, ctx, step);
      });
      // A dry run's completion is its own write (`complete`): never done here.
      return { output: (await stepOutputs(em(), ctx, [step.nodeId])).get(step.nodeId) ?? step.output, running: true, completed: false };
    },

    // No customer message can claim a dry run's prompt: its replies are the recorded ones.
    async openWait() {
      return 'open';
    },

    async recordPrompt(ctx, msg) {
      await insertMessage(em(), ctx, msg);
    },

    async closeWait() {
      return { state: 'closed' };
    },

    async recordFormStep(ctx, step) {
      await insertStep(em(), ctx, step);
      return 'recorded';
    },

    // Nobody is handed off by a dry run: the step says it would have been.
    async handOff(ctx, step) {
      await insertStep(em(), ctx, step);
      return 'handed_off';
    },

    /** The item's outcome and its diff against the recorded execution, in one transaction. */
    async complete(ctx, completion, failedStep) {
      const dryRunId = dryRunIdOf(ctx);
      return await em().transactional(async (tx) => {
        const t = tx as EntityManager;
        if (failedStep) await insertStep(t, ctx, failedStep);
        const diff = diffRuns(await loadRecordedRun(t, ctx.executionId), await loadDryRunRecord(t, dryRunId, ctx.executionId));
        const rows = await t.execute(
          `update dry_run_items set status = ?, output = ?::jsonb, error_type = ?, error_message = ?, diff = ?::jsonb, completed_at = now()
            where dry_run_id = ? and execution_id = ? and status = 'pending' returning 1`,
          [
            completion.status,
            completion.output === null ? null : JSON.stringify(completion.output),
            completion.errorType ?? null,
            completion.errorMessage?.slice(0, 2000) ?? null,
            JSON.stringify(diff),
            dryRunId,
            ctx.executionId,
          ],
        );
        return rows.length > 0;
      });
    },
  };
}
