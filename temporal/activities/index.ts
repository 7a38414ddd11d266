/**
 * Owns the activity registry: `createActivities(deps)` merges every domain's activity
 * factory into the one object a worker registers. Dependencies (DB, HTTP clients, config)
 * arrive through `deps` so tests can build activities against their own services.
 */
import { createConnectivityActivities } from './connectivity.activities';

/** Everything activities may need from the process; domains add their fields here. */
export interface ActivityDeps {}

export function createActivities(_deps: ActivityDeps) {
  return {
    ...createConnectivityActivities(),
  };
}

export type Activities = ReturnType<typeof createActivities>;
