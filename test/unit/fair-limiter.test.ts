/**
 * The fair bound of background Temporal calls (src/background-tasks.ts) and of the intake
 * of inbound messages (inbound-state.ts): at most `limit` run at once, and waiting callers
 * are served the organization with the fewest in flight first, in turn among equals, each
 * organization's own in arrival order. The adaptive capacity itself: adaptive-capacity.test.ts.
 */
import { BackgroundTasks } from '../../src/background-tasks';
import { BACKLOG_HOLD_MS, FairLimiter } from '../../src/fair-limiter';
import { createLogger } from '../../src/logger';
import { createInboundState } from '../../src/modules/inbound/inbound-state';
import type { Services } from '../../src/services';

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

it('tells each call whether its organization was backlogged when it got its slot: calls of its own still waiting, or more than BACKLOG_HELD held', async () => {
  const told: Array<[string, boolean]> = [];
  const call = (limiter: FairLimiter, key: string, name: string) =>
    limiter.run(key, async ({ backlogged }) => {
      told.push([name, backlogged]);
      await tick();
    });
  // One slot: a1 runs at once; a2 gets the slot while a3 still waits; b1 waits behind no call
  // of its own; a3 neither, but a was backlogged a moment ago (BACKLOG_HOLD_MS).
  const one = new FairLimiter(1);
  await Promise.all([call(one, 'a', 'a1'), call(one, 'a', 'a2'), call(one, 'a', 'a3'), call(one, 'b', 'b1')]);
  expect(told).toEqual([['a1', false], ['a2', true], ['b1', false], ['a3', true]]);
  // Free slots: nothing waits, but the third call at once is more than BACKLOG_HELD (2) held.
  told.length = 0;
  const many = new FairLimiter(8);
  await Promise.all([call(many, 'a', 'a1'), call(many, 'a', 'a2'), call(many, 'a', 'a3'), call(many, 'b', 'b1')]);
  expect(told).toEqual([['a1', false], ['a2', false], ['a3', true], ['b1', false]]);
});

it("keeps an organization backlogged for BACKLOG_HOLD_MS after its last backlogged call, so its next calls do not overtake its earlier ones' work", async () => {
  let offset = 0;
  const realNow = performance.now.bind(performance);
  const now = jest.spyOn(performance, 'now').mockImplementation(() => realNow() + offset);
  try {
    const limiter = new FairLimiter(8);
    const backlogged = (key: string) => limiter.run(key, async (admission) => admission.backlogged);
    // Three of a's calls at once: the third is backlogged.
    expect(await Promise.all([backlogged('a'), backlogged('a'), backlogged('a')])).toEqual([false, false, true]);
    // a's next call alone, within the hold: still backlogged; b's never.
    offset += BACKLOG_HOLD_MS - 1_000;
    expect(await backlogged('a')).toBe(true);
    expect(await backlogged('b')).toBe(false);
    // The hold counts from a's last backlogged call, not from its last call.
    offset += 2_000;
    expect(await backlogged('a')).toBe(false);
  } finally {
    now.mockRestore();
  }
});

it('gives the slot back when a task fails', async () => {
  const limiter = new FairLimiter(1);
  await expect(limiter.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  await expect(limiter.run('b', async () => 'ran')).resolves.toBe('ran');
});

it('holds an organization to its share while another is active, and gives it every slot alone', async () => {
  const limiter = new FairLimiter(4, { share: 2, windowMs: 200 });
  const started: string[] = [];
  const gates = Object.fromEntries(['a1', 'a2', 'a3', 'a4', 'b1', 'a5', 'a6', 'a7', 'b2'].map((n) => [n, gate(started, n)]));
  // Alone, a takes all four slots.
  const alone = ['a1', 'a2', 'a3', 'a4'].map((n) => limiter.run('a', gates[n]!.task));
  await tick();
  expect(started).toEqual(['a1', 'a2', 'a3', 'a4']);
  // b asks while a holds every slot: b gets the first free one, and from then on a holds at most 2.
  const shared = [limiter.run('b', gates.b1!.task), limiter.run('a', gates.a5!.task), limiter.run('a', gates.a6!.task), limiter.run('a', gates.a7!.task)];
  for (const n of ['a1', 'a2', 'a3', 'a4']) gates[n]!.open();
  await Promise.all(alone);
  await tick();
  expect(started.slice(4)).toEqual(['b1', 'a5', 'a6']);
  // A slot is free, but a is at its share while b is active: b's next call passes a's waiting one.
  shared.push(limiter.run('b', gates.b2!.task));
  await tick();
  expect(started.slice(7)).toEqual(['b2']);
  // b finishes; a stays at its share within the window, then gets the slot when one of its own calls ends.
  gates.b1!.open();
  gates.b2!.open();
  await tick();
  await tick();
  expect(started).not.toContain('a7');
  gates.a5!.open();
  await tick();
  await tick();
  expect(started.at(-1)).toBe('a7');
  gates.a6!.open();
  gates.a7!.open();
  await Promise.all(shared);
});

it('lets a key past its share once the others have been quiet for the window', async () => {
  const limiter = new FairLimiter(3, { share: 1, windowMs: 30 });
  await limiter.run('b', async () => undefined);
  const started: string[] = [];
  const [a1, a2] = [gate(started, 'a1'), gate(started, 'a2')];
  const first = limiter.run('a', a1.task);
  const second = limiter.run('a', a2.task);
  await tick();
  expect(started).toEqual(['a1']);
  await new Promise((r) => setTimeout(r, 50));
  // b went quiet: a's next call finds it alone, and both waiting calls run at once.
  const a3 = gate(started, 'a3');
  const third = limiter.run('a', a3.task);
  await tick();
  expect(started).toEqual(['a1', 'a2', 'a3']);
  a1.open();
  a2.open();
  a3.open();
  await Promise.all([first, second, third]);
});

it('drops the calls still waiting at shutdown, runs none of them, and finishes those in flight', async () => {
  const lines: string[] = [];
  const logger = createLogger('info', { write: (l: string) => void lines.push(l) });
  const background = new BackgroundTasks(logger, { limit: 1 });
  const started: string[] = [];
  const first = gate(started, 'first');
  background.run('start', first.task, 'a');
  background.run('start', gate(started, 'second').task, 'a');
  background.run('start', gate(started, 'third').task, 'b');
  await tick();
  const drained = background.drain();
  first.open();
  await drained;
  expect(started).toEqual(['first']);
  expect(lines.map((l) => JSON.parse(l) as { msg: string; abandoned?: number }).find((l) => l.abandoned !== undefined)).toMatchObject({ abandoned: 2 });
  expect(lines.join('')).not.toContain('failed');
});

it('with no bound of its own, holds an organization to its share only while another is active, and tells a waiting call when it waits and when it runs', async () => {
  // As the API's intake of inbound messages (inbound-state.ts): a share, no overall bound.
  const limiter = new FairLimiter(Number.POSITIVE_INFINITY, { share: 1, windowMs: 60_000 });
  const started: string[] = [];
  const heard: string[] = [];
  const watch = (name: string) => ({ queued: () => heard.push(`${name} waits`), admitted: () => heard.push(`${name} runs`) });
  const gates = Object.fromEntries(['a1', 'a2', 'a3', 'b1'].map((n) => [n, gate(started, n)]));
  // Alone, a takes as many as it asks for: nobody waits.
  const alone = [limiter.run('a', gates.a1!.task, watch('a1')), limiter.run('a', gates.a2!.task, watch('a2'))];
  await tick();
  expect(started).toEqual(['a1', 'a2']);
  // Once b is active, a's next call waits for a's calls to fall below its share of 1; b's first does not wait.
  const b1 = limiter.run('b', gates.b1!.task, watch('b1'));
  const a3 = limiter.run('a', gates.a3!.task, watch('a3'));
  await tick();
  expect(started).toEqual(['a1', 'a2', 'b1']);
  expect(heard).toEqual(['a3 waits']);
  gates.a1!.open();
  await tick();
  expect(started).not.toContain('a3');
  gates.a2!.open();
  await tick();
  await tick();
  expect(started).toContain('a3');
  expect(heard).toEqual(['a3 waits', 'a3 runs']);
  for (const g of ['a3', 'b1']) gates[g]!.open();
  await Promise.all([...alone, b1, a3]);
});

it('gives a dropped waiting call\'s watch its say before the drain ends (the leases of queued starts are given back)', async () => {
  const tasks = new BackgroundTasks(createLogger('silent'), { limit: 1 });
  const started: string[] = [];
  const held = gate(started, 'held');
  const given: string[] = [];
  const watch = (name: string) => ({
    queued: () => undefined,
    admitted: () => undefined,
    abandoned: async () => {
      await tick();
      given.push(name);
    },
  });
  tasks.run('held', held.task, 'a', watch('held'));
  tasks.run('queued 1', async () => void started.push('queued 1'), 'a', watch('queued 1'));
  tasks.run('queued 2', async () => void started.push('queued 2'), 'a', watch('queued 2'));
  await tick();
  await tick();
  const drained = tasks.drain();
  held.open();
  await drained;
  expect(started).toEqual(['held']);
  expect(given.sort()).toEqual(['queued 1', 'queued 2']);
});

it('holds an organization that is behind while another is active until a recheck finds it caught up, and never a lone one', async () => {
  const behind = new Set<string>(['a']);
  const limiter = new FairLimiter(Number.POSITIVE_INFINITY, { share: 1, windowMs: 1_000, behind: (key) => behind.has(key) });
  const started: string[] = [];
  const call = (key: string, name: string) => limiter.run(key, async () => void started.push(name));
  // Alone, a's calls run, behind or not.
  await Promise.all([call('a', 'a1'), call('a', 'a2')]);
  expect(started).toEqual(['a1', 'a2']);
  // b is active: a's calls wait while a is behind; b's do not.
  await call('b', 'b1');
  const held = [call('a', 'a3'), call('a', 'a4')];
  await call('b', 'b2');
  limiter.recheck();
  await tick();
  expect(started).toEqual(['a1', 'a2', 'b1', 'b2']);
  // Caught up: the next recheck lets a's calls go, in their order.
  behind.delete('a');
  limiter.recheck();
  await Promise.all(held);
  expect(started.slice(4)).toEqual(['a3', 'a4']);
});

it("records an organization's messages only while fewer than INBOUND_STARTS_WAITING_PER_ORGANIZATION of its starts wait, with another active", async () => {
  const config = { INBOUND_MESSAGES_PER_ORGANIZATION: 1, INBOUND_STARTS_WAITING_PER_ORGANIZATION: 2 };
  const background = new BackgroundTasks(createLogger('silent'), { limit: 2 });
  const { intake } = createInboundState({ config, background, hotPool: {}, logger: createLogger('silent') } as unknown as Services);
  const started: string[] = [];
  const starts = Object.fromEntries(['b1', 'a1', 'a2', 'a3', 'a4'].map((n) => [n, gate(started, n)]));
  // b holds a start (another organization is active); a's first start takes the other slot, its next two wait.
  background.run('execution start', starts.b1!.task, 'b');
  for (const n of ['a1', 'a2', 'a3']) background.run('execution start', starts[n]!.task, 'a');
  await tick();
  await tick();
  expect(started).toEqual(['b1', 'a1']);
  expect(background.waitingCalls('a')).toBe(2);
  // b's messages arrive too. Two of a's starts wait: a's next message waits to be recorded; b's are recorded at once.
  const recorded: string[] = [];
  await intake.run('b', async () => void recorded.push('b'));
  const message = intake.run('a', async () => void recorded.push('a'));
  await intake.run('b', async () => void recorded.push('b'));
  await tick();
  expect(recorded).toEqual(['b', 'b']);
  // One of a's starts gets its slot: one waits now, so a's message is recorded.
  starts.a1!.open();
  await message;
  expect(recorded).toEqual(['b', 'b', 'a']);
  expect(started).toEqual(['b1', 'a1', 'a2']);
  for (const n of ['b1', 'a2', 'a3']) starts[n]!.open();
  await background.drain();
});
