/**
 * Determinism across the `message-nodes-local-activities` patch and version 2 (runs of
 * message nodes, chosen by the start input's `version`):
 * histories recorded by real runs (message → form with a reply → message, then the
 * completion) replay against the current workflow code: one recorded before the first patch
 * (message nodes as task-queue activities, no marker), one started before it and finished
 * by a worker with it (a deployment while the run waited on its form), one recorded after
 * it (patch marker, a local-activity marker per message node and the completion), and one
 * of version 2 (no patch marker, one `runMessageRun` marker per run); and a phone call on
 * each side of the `voice-ask-before-prompt-activity` patch. Runs in flight at a deployment must keep going after it.
 * Recorded with the service's own worker against a dev server; `@temporalio/proto` (the
 * SDK's own dependency, same version) reads them, as the SDK's JSON reader refuses the
 * timestamps `fetchHistory()` writes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { installQuietRuntime, workflowBundle } from '../../helpers/temporal';

const fixture = (name: string) =>
  temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path.join(__dirname, '..', 'fixtures', name), 'utf8')));

describe('execution workflow replay', () => {
  it.each([
    ['started before message nodes became local activities', 'message-form-message.before-local-activities.history.json', 4],
    // Started by the old worker, which sent "hello" and the prompt; the new one took the reply and sent "bye".
    ['deployed while it waited on its form', 'message-form-message.deployed-during-form.history.json', 3],
    ['started with message nodes as local activities', 'message-form-message.local-activities.history.json', 2],
    // Version 2: each message node a run of its own here, the last one with the completion.
    ['started with runs of message nodes (version 2)', 'message-form-message.message-runs.history.json', 2],
    // A phone call (greeting, an email asked twice, goodbye) from before VOICE_ASK_AHEAD: each
    // turn's Update completed after the prompt activity; and one with the patch marker, where
    // it completes in the workflow task that scheduled the activity.
    ['of a phone call recorded before questions went ahead of their prompt activities', 'voice-call.before-ask-ahead.history.json', 3],
    ['of a phone call with its questions ahead of their prompt activities', 'voice-call.ask-ahead.history.json', 3],
  ])('a run %s replays without a nondeterminism error', async (_label, file, taskQueueActivities) => {
    installQuietRuntime();
    const history = fixture(file);
    // The fixture is what its name says: how many nodes ran as task-queue activities.
    const scheduled = history.events.filter((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(scheduled).toHaveLength(taskQueueActivities);
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'replay-' + file)).resolves.toBeUndefined();
  });
});
