/**
 * Owns the connectivity activities: the smallest real round trip through a worker
 * (server → workflow task → activity task → result), used by `connectivityCheckWorkflow`
 * in the worker tests to prove a worker is actually polling the task queue.
 */
export function createConnectivityActivities() {
  return {
    async ping(): Promise<'pong'> {
      return 'pong';
    },
  };
}

export type ConnectivityActivities = ReturnType<typeof createConnectivityActivities>;
