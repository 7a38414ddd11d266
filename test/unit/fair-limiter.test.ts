/**
 * The fair bound of background Temporal calls (src/background-tasks.ts): at most `limit`
 * run at once, and waiting callers are served one organization at a time, in turn, each
 * organization's own in arrival order.
 */
import { FairLimiter } from '../../src/background-tasks';

/** A task that runs until released, recording when it started. */
function gate(started: string[], name: string) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { task: async () => void (started.push(name), await opened), open };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

it('runs at most `limit` tasks at once and serves waiting organizations in turn', async () => {
  const limiter = new FairLimiter(2);
  const started: string[] = [];
  const gates = Object.fromEntries(['x1', 'x2', 'a1', 'a2', 'a3', 'b1', 'c1'].map((n) => [n, gate(started, n)]));
  const runs = [
    limiter.run('x', gates.x1!.task),
    limiter.run('x', gates.x2!.task),
    // Organization a floods before b and c ask for one call each.
    limiter.run('a', gates.a1!.task),
    limiter.run('a', gates.a2!.task),
    limiter.run('a', gates.a3!.task),
    limiter.run('b', gates.b1!.task),
    limiter.run('c', gates.c1!.task),
  ];
  await tick();
  expect(started).toEqual(['x1', 'x2']);
  for (const next of ['x1', 'x2', 'a1', 'b1', 'c1', 'a2', 'a3']) {
    gates[next]!.open();
    await tick();
    await tick();
  }
  await Promise.all(runs);
  expect(started).toEqual(['x1', 'x2', 'a1', 'b1', 'c1', 'a2', 'a3']);
});

it('gives the slot back when a task fails', async () => {
  const limiter = new FairLimiter(1);
  await expect(limiter.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  await expect(limiter.run('b', async () => 'ran')).resolves.toBe('ran');
});
