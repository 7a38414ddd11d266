/**
 * Owns the activity registry: `createActivities(deps)` merges every domain's activity
 * factory into the one object a worker registers. Dependencies (DB, HTTP clients, config)
 * arrive through `deps` so tests can build activities against their own services.
 */
import { createAgentMessageActivities } from './agent-messages.activities';
import { createConnectivityActivities } from './connectivity.activities';
import { createDebounceActivities } from './debounce.activities';
import { createDryRunActivities } from './dry-runs.activities';
import { createExecutionActivities } from './executions.activities';
import { liveExecutionSink } from '../../src/modules/executions/execution-sink';
import { executionSender } from '../../src/modules/channels/channel-delivery';
import { LOW_CONFIDENCE, startHandoff } from '../../src/modules/handoffs/handoff.service';
import { createHandoffActivities } from './handoffs.activities';
import { createExportActivities } from './exports.activities';
import { createFileExpiryActivities } from './file-jobs.activities';
import { createReportActivities } from './reports.activities';
import { createReplayActivities } from './replays.activities';
import { createTriggerActivities } from './triggers.activities';
import { createWebhookActivities } from './webhooks.activities';
import { createWebhookRecoveryActivities } from './webhook-recoveries.activities';

import type { Services } from '../../src/services';

/** Everything activities may need from the process: the shared infrastructure (src/services.ts), no module state of the API's. */
export interface ActivityDeps {
  services: Services;
}

/**
 * The live sink of executions, wired here: its send comes from channels and its handoff from
 * handoffs, two modules above executions that executions therefore never imports.
 */
function liveSink(services: Services) {
  return liveExecutionSink(services, {
    send: executionSender(services),
    handOff: async (ctx) => {
      await startHandoff(services, { organizationId: ctx.organizationId, customerId: ctx.customerId, reason: LOW_CONFIDENCE, executionId: ctx.executionId });
    },
  });
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createConnectivityActivities(),
    ...createExecutionActivities({ services: deps.services, sink: liveSink(deps.services) }),
    ...createTriggerActivities({ services: deps.services }),
    ...createWebhookActivities({ services: deps.services }),
    ...createExportActivities({ services: deps.services }),
    ...createWebhookRecoveryActivities({ services: deps.services }),
    ...createReportActivities({ services: deps.services }),
    ...createFileExpiryActivities({ services: deps.services }),
    ...createReplayActivities({ services: deps.services }),
    ...createDryRunActivities({ services: deps.services }),
    ...createAgentMessageActivities({ services: deps.services }),
    ...createHandoffActivities({ services: deps.services }),
    ...createDebounceActivities({ services: deps.services }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
