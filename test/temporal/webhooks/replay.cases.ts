/**
 * Determinism of `webhookDeliveryWorkflow` across version 2 (the first attempt as a local
 * activity): histories recorded by real deliveries (the receiver answered 503, then 200)
 * replay against the current workflow code. One was started before version 2 (both attempts
 * task-queue activities, no version in the input), one with it (the local attempt's marker,
 * the retry's timer, then the task-queue activity). Deliveries in flight at a deployment
 * must keep going after it. Read as in test/executions/runs/replay-history.cases.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { installQuietRuntime, workflowBundle } from '../../helpers/temporal';

const { EventType } = temporal.api.enums.v1;
const fixture = (name: string) =>
  temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path.join(__dirname, '..', 'fixtures', name), 'utf8')));

describe('webhook delivery workflow replay', () => {
  it.each([
    ['started before version 2', 'webhook-delivery.task-queue-attempts.history.json', 0, 2],
    ['started with the local first attempt (version 2)', 'webhook-delivery.local-first-attempt.history.json', 1, 1],
  ])('a delivery %s replays without a nondeterminism error', async (_label, file, markers, taskQueueAttempts) => {
    installQuietRuntime();
    const history = fixture(file);
    const events = (type: number) => history.events.filter((e) => e.eventType === type);
    // The fixture is what its name says: where its two attempts ran (a task-queue
    // activity's retries are one started event, with the attempt it ended on).
    expect(events(EventType.EVENT_TYPE_MARKER_RECORDED)).toHaveLength(markers);
    const started = events(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED);
    expect(started.map((e) => e.activityTaskStartedEventAttributes!.attempt)).toEqual([taskQueueAttempts]);
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'replay-' + file)).resolves.toBeUndefined();
  });
});
