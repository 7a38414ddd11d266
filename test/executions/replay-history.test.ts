/**
 * Determinism across the `message-nodes-local-activities` patch: histories recorded by real
 * runs (message → form with a reply → message, then the completion) replay against the
 * current workflow code. The first was recorded before the patch (message nodes as
 * task-queue activities, no marker): a run started before a deployment must keep going
 * after it. The second was recorded after it (patch marker, local-activity markers).
 * Recorded with the service's own worker against a dev server; `@temporalio/proto` (the
 * SDK's own dependency, same version) reads them, as the SDK's JSON reader refuses the
 * timestamps `fetchHistory()` writes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { installQuietRuntime, workflowBundle } from '../helpers/temporal';

const fixture = (name: string) =>
  temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path.join(__dirname, 'fixtures', name), 'utf8')));

describe('execution workflow replay', () => {
  it.each([
    ['started before message nodes became local activities', 'message-form-message.before-local-activities.history.json'],
    ['started with message nodes as local activities', 'message-form-message.local-activities.history.json'],
  ])('a run %s replays without a nondeterminism error', async (_label, file) => {
    installQuietRuntime();
    const history = fixture(file);
    const kinds = history.events.map((e) => e.eventType);
    // The fixture is what its name says: task-queue message activities, or markers only.
    const scheduled = kinds.filter((k) => k === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).length;
    expect(scheduled).toBe(file.includes('before') ? 4 : 2);
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'replay-' + file)).resolves.toBeUndefined();
  });
});
