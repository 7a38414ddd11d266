/**
 * The authorization server is built at its first use (src/modules/oauth/oauth-state.ts,
 * `builtOnFirstUse`): once for every caller, and again after a failed build (PostgreSQL
 * away at the first OAuth request must not leave the server unbuildable).
 */
import { builtOnFirstUse } from '../../src/modules/oauth/oauth-state';

it('builds at the first call, once for concurrent and later callers, and again after a failure', async () => {
  let builds = 0;
  let failNext = true;
  const get = builtOnFirstUse(async () => {
    builds++;
    if (failNext) throw new Error('PostgreSQL away');
    return { n: builds };
  });
  expect(builds).toBe(0);
  await expect(get()).rejects.toThrow('PostgreSQL away');
  failNext = false;
  const [a, b] = await Promise.all([get(), get()]);
  expect(a).toBe(b);
  expect(await get()).toBe(a);
  expect(builds).toBe(2);
});
