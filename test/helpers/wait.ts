/** Bounded waiting for tests: poll a condition until it holds or a deadline passes. */

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `fn` until it returns something other than undefined, null or false, and returns
 * that. Errors thrown by `fn` count as "not yet"; the last one is reported on timeout.
 */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false>,
  what = 'condition',
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== null && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(50);
  }
}

/**
 * Sends a request as a well-behaved client does: a 503 (the service changed nothing: the
 * database or the scheduler was too slow on a loaded machine) is sent again after its
 * Retry-After, up to `attempts` times. Any other answer is returned as it is.
 */
export async function resendWhileUnavailable<R extends { status: number; headers: Record<string, string> }>(
  send: () => PromiseLike<R>,
  attempts = 5,
): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    const res = await send();
    if (res.status !== 503 || attempt >= attempts) return res;
    await sleep(Number(res.headers['retry-after'] ?? 1) * 1000);
  }
}
