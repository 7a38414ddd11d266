/**
 * Determinism of `exportWorkflow` across the `export-count-during-generation` patch:
 * histories recorded by real exports (1 000 executions to CSV, `npm run bench -- exports`)
 * replay against the current workflow code. One was started before the patch (prepare,
 * generate and complete as task-queue activities, no marker; a run that a deployment reached
 * mid-file finishes the same way), one with it (the patch marker, the generation activity,
 * then the completion's local-activity marker). Exports in flight at a deployment must keep
 * going after it. Read as in test/executions/runs/replay-history.cases.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { installQuietRuntime, workflowBundle } from '../../helpers/temporal';

const { EventType } = temporal.api.enums.v1;
const fixture = (name: string) =>
  temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path.join(__dirname, '..', 'fixtures', name), 'utf8')));

describe('export workflow replay', () => {
  it.each([
    ['started before the count moved into generation', 'export.before-count-during-generation.history.json', ['prepareExport', 'generateExportFile', 'completeExport'], 0],
    ['started with the count during generation', 'export.count-during-generation.history.json', ['generateExportFile'], 2],
  ])('an export %s replays without a nondeterminism error', async (_label, file, activities, markers) => {
    installQuietRuntime();
    const history = fixture(file);
    const events = (type: number) => history.events.filter((e) => e.eventType === type);
    // The fixture is what its name says: its task-queue activities, and markers (the patch, the local completion).
    expect(events(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name)).toEqual(activities);
    expect(events(EventType.EVENT_TYPE_MARKER_RECORDED)).toHaveLength(markers);
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'replay-' + file)).resolves.toBeUndefined();
  });
});
