/**
 * A schedule trigger's firing retried by a real Temporal worker: the activity's first
 * attempt records the firing and starts the execution, then fails as if the worker had
 * lost the attempt's completion (the commit happened, Temporal never heard of it).
 * Temporal retries it; the retry finds the firing of this scheduled run (its workflow id is
 * the dedupe key) and returns it: one firing, one execution.
 */
import { Context } from '@temporalio/activity';
import { createActivities } from '../../../temporal/activities';
import { triggerScheduleId, type FireScheduledTriggerInput, type FireScheduledTriggerResult } from '../../../temporal/triggers.shared';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { resendWhileUnavailable, waitFor } from '../../helpers/wait';

describe('schedule trigger firing retried by Temporal', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  let workflowId: string;
  /** Every attempt of the firing activity: its number and what the real activity returned. */
  const attempts: Array<{ attempt: number; runKey: string; result: FireScheduledTriggerResult }> = [];
  /** The first attempt's completion is lost; later ones complete. */
  let loseNextCompletion = true;

  beforeAll(async () => {
    t = await createTestApp();
    const activities = createActivities({ services: t.services });
    worker = await startTestWorker({
      taskQueue: t.config.TEMPORAL_TASK_QUEUE,
      activities: {
        ...activities,
        async fireScheduledTrigger(input: FireScheduledTriggerInput) {
          const { attempt } = Context.current().info;
          const result = await activities.fireScheduledTrigger(input);
          attempts.push({ attempt, runKey: input.runKey, result });
          // The firing is committed; this attempt's completion is lost.
          if (loseNextCompletion) {
            loseNextCompletion = false;
            throw new Error('connection to Temporal lost before the attempt completed');
          }
          return result;
        },
      },
    });
    key = (await t.createKey('admin')).key;
    const wf = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'Nightly digest', channel: 'whatsapp', configuration: { nodes: [{ id: 'n1', type: 'message', content: 'Digest' }] } });
    workflowId = wf.body.data.id;
    expect((await t.request.post(`/v1/workflows/${workflowId}/activate`).set(bearer(key))).status).toBe(200);
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
  });

  it('records one firing and starts one execution when the activity is retried after its commit', async () => {
    const created = await t.request
      .post('/v1/triggers')
      .set(bearer(key))
      .send({ workflow_id: workflowId, name: 'Retried', type: 'schedule', configuration: { cron_expression: '0 0 1 1 *' } });
    expect(created.status).toBe(201);
    const triggerId = created.body.data.id as string;
    const handle = t.services.temporal.client.schedule.getHandle(triggerScheduleId(triggerId));
    // The cron would fire next January: fire it now.
    await handle.trigger();

    await waitFor(async () => attempts.some((a) => a.attempt === 2), 'the retried attempt');
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2]);
    const [first, retry] = attempts;
    expect(first!.result.outcome).toBe('started');
    expect(retry!.runKey).toBe(first!.runKey);
    expect(retry!.result).toEqual(first!.result);

    const firings = await waitFor(async () => {
      const list = await t.request.get(`/v1/triggers/${triggerId}/executions`).set(bearer(key));
      return list.body.data?.[0]?.status === 'success' && list.body.data;
    }, 'the firing to finish');
    expect(firings).toEqual([expect.objectContaining({ id: first!.result.triggerExecutionId, output: expect.objectContaining({ workflow_execution_id: first!.result.executionId }) })]);
    expect(await t.query('select id from trigger_executions where trigger_id = ?', [triggerId])).toEqual([{ id: first!.result.triggerExecutionId }]);
    expect(await t.query('select id, status from executions where trigger_id = ?', [triggerId])).toEqual([{ id: first!.result.executionId, status: 'success' }]);
    expect((await t.request.get(`/v1/triggers/${triggerId}`).set(bearer(key))).body.data.execution_count).toBe(1);

    // A paused trigger's next scheduled run is skipped, recording nothing (the worker runs it as the schedule would).
    // The pause updates the schedule; on a loaded machine that may be refused with a 503 (nothing changed), which a client sends again.
    expect((await resendWhileUnavailable(() => t.request.post(`/v1/triggers/${triggerId}/pause`).set(bearer(key)))).status).toBe(200);
    const skipped = await t.services.temporal.client.workflow.execute('scheduledTriggerWorkflow', {
      args: [{ organizationId: (await t.query<{ organization_id: string }>('select organization_id from triggers where id = ?', [triggerId]))[0]!.organization_id, triggerId }],
      taskQueue: t.config.TEMPORAL_TASK_QUEUE,
      workflowId: `trigger-fire:${triggerId}-another-run`,
    });
    expect(skipped).toMatchObject({ outcome: 'skipped' });
    expect(await t.query('select id from trigger_executions where trigger_id = ?', [triggerId])).toHaveLength(1);
  });
});
