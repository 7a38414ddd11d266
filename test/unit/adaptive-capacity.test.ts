/**
 * Work-conserving fair sharing of the API's background Temporal calls
 * (src/background-tasks.ts, src/fair-limiter.ts, src/adaptive-capacity.ts): an
 * organization alone uses every slot, a newcomer's call takes the next free slot, several
 * floods are served in turn, and the number of slots follows the calls' latency (an
 * injected clock stands for time, so nothing here depends on the machine's speed).
 */
import { AdaptiveCapacity } from '../../src/adaptive-capacity';
import { BackgroundTasks, CAPACITY_REDUCED_MSG } from '../../src/background-tasks';
import { ConfigError, loadConfig } from '../../src/config';
import { FairLimiter } from '../../src/fair-limiter';
import { createLogger } from '../../src/logger';

const tick = () => new Promise((resolve) => setImmediate(resolve));
const settle = async () => {
  for (let i = 0; i < 5; i++) await tick();
};

/** Calls that run until released; `started` lists them in the order they got a slot. */
function calls() {
  const started: string[] = [];
  const open = new Map<string, () => void>();
  const call = (name: string) => async () => {
    started.push(name);
    await new Promise<void>((resolve) => open.set(name, resolve));
  };
  const finish = async (name: string) => {
    open.get(name)!();
    open.delete(name);
    await settle();
  };
  return { started, call, finish, running: () => [...open.keys()] };
}

/** A clock the test moves. */
function fakeClock() {
  let now = 0;
  return { clock: () => now, advance: (ms: number) => void (now += ms) };
}

describe('the fair queue of background calls', () => {
  it('gives an organization alone every slot, also right after another organization was active', async () => {
    // A clock that stands still: every call answers at the floor, so the capacity stays at its most.
    const background = new BackgroundTasks(createLogger('silent'), { limit: 8, clock: () => 0 });
    const c = calls();
    background.run('start', c.call('b1'), 'b');
    await settle();
    await c.finish('b1');
    for (let i = 1; i <= 20; i++) background.run('start', c.call(`a${i}`), 'a');
    await settle();
    // No share while b was recently active: a holds all 8, the other 12 wait.
    expect(c.started).toEqual(['b1', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8']);
    expect(background.waitingCalls('a')).toBe(12);
    // Each call that ends hands its slot to a's next one: the slots stay in use.
    await c.finish('a1');
    expect(c.started.at(-1)).toBe('a9');
    expect(c.running()).toHaveLength(8);
    const drained = background.drain();
    for (const name of c.running()) await c.finish(name);
    await drained;
  });

  it("gives a newcomer's call the next free slot, ahead of the flood's waiting calls", async () => {
    const background = new BackgroundTasks(createLogger('silent'), { limit: 4, clock: () => 0 });
    const c = calls();
    for (let i = 1; i <= 10; i++) background.run('start', c.call(`a${i}`), 'a');
    await settle();
    background.run('start', c.call('b1'), 'b');
    await settle();
    expect(c.started).toEqual(['a1', 'a2', 'a3', 'a4']);
    await c.finish('a1');
    expect(c.started.at(-1)).toBe('b1');
    // b's next call also goes first, while it holds fewer than a.
    background.run('start', c.call('b2'), 'b');
    await settle();
    await c.finish('a2');
    expect(c.started.slice(4)).toEqual(['b1', 'b2']);
    await c.finish('a3');
    expect(c.started.at(-1)).toBe('a5');
    const drained = background.drain();
    for (const name of c.running()) await c.finish(name);
    await drained;
  });

  it('serves several floods in turn, so each holds an equal part of the slots', async () => {
    const limiter = new FairLimiter(3);
    const c = calls();
    const runs: Promise<void>[] = [];
    for (let i = 1; i <= 6; i++) runs.push(limiter.run('a', c.call(`a${i}`)));
    for (const key of ['b', 'c']) for (let i = 1; i <= 4; i++) runs.push(limiter.run(key, c.call(`${key}${i}`)));
    await settle();
    expect(c.started).toEqual(['a1', 'a2', 'a3']);
    // The oldest call in flight ends each time; the slot goes to the organization holding the fewest.
    while (c.started.length < 12) await c.finish(c.running()[0]!);
    expect(c.started.slice(3).map((n) => n[0]).join('')).toBe('bcabcabca');
    while (c.running().length > 0) await c.finish(c.running()[0]!);
    await Promise.all(runs);
  });

  it('holds fewer calls in flight while they answer slower than twice their floor, and every slot again once they are fast', async () => {
    const { clock, advance } = fakeClock();
    const lines: Array<{ msg: string; calls_in_flight?: number }> = [];
    const background = new BackgroundTasks(createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l)) }), { limit: 16, clock });
    const c = calls();
    /** `n` calls that each answer `latencyMs` after it got its slot (a server that answers calls in parallel); the most in flight at once. */
    const inFlightAtOnce = async (n: number, latencyMs: number, prefix: string): Promise<number> => {
      for (let i = 0; i < n; i++) background.run('start', c.call(`${prefix}${i}`), 'a');
      await settle();
      let most = 0;
      while (c.running().length > 0) {
        const round = c.running();
        most = Math.max(most, round.length);
        advance(latencyMs);
        for (const name of round) await c.finish(name);
      }
      return most;
    };
    // Temporal answers in 10 ms: all 16 slots are used.
    expect(await inFlightAtOnce(40, 10, 'fast')).toBe(16);
    // It slows to 60 ms (a queue at the server): the capacity is cut, down to its floor of 4.
    await inFlightAtOnce(200, 60, 'slow');
    expect(background.capacity.limit).toBe(4);
    expect(await inFlightAtOnce(20, 60, 'still-slow')).toBe(4);
    // An operator is told: Temporal is queueing, and the API holds fewer calls in flight.
    expect(lines.filter((l) => l.msg === CAPACITY_REDUCED_MSG).length).toBeGreaterThan(0);
    // Fast again: it grows back, one slot per round trip, to every slot.
    await inFlightAtOnce(300, 10, 'recovered');
    expect(background.capacity.limit).toBe(16);
    expect(lines.at(-1)).toMatchObject({ msg: expect.stringContaining('near its floor again'), calls_in_flight: 16 });
    await background.drain();
  });
});

describe('the adaptive capacity', () => {
  it('starts at its most, keeps it while calls answer near their floor, and cuts it at most once per round trip when they do not', () => {
    const { clock, advance } = fakeClock();
    const capacity = new AdaptiveCapacity({ min: 2, max: 10, clock });
    for (let i = 0; i < 20; i++) (advance(1), capacity.observe(10 + (i % 2) * 5, true));
    expect(capacity.limit).toBe(10);
    expect(capacity.floor).toBe(10);
    // A burst of slow answers within one round trip: one cut, not one per answer.
    for (let i = 0; i < 10; i++) capacity.observe(200, true);
    expect(capacity.limit).toBe(8);
    // Later round trips, still slow: cut again each time, never below its least.
    for (let i = 0; i < 20; i++) (advance(250), capacity.observe(200, true));
    expect(capacity.limit).toBe(2);
  });

  it('grows only while its slots are all in use', () => {
    const { clock, advance } = fakeClock();
    const capacity = new AdaptiveCapacity({ min: 2, max: 10, clock });
    for (let i = 0; i < 30; i++) (advance(100), capacity.observe(i === 0 ? 10 : 200, true));
    expect(capacity.limit).toBe(2);
    for (let i = 0; i < 50; i++) (advance(10), capacity.observe(10, false));
    expect(capacity.limit).toBe(2);
    for (let i = 0; i < 100; i++) (advance(10), capacity.observe(10, true));
    expect(capacity.limit).toBe(10);
  });

  it("takes a latency that lasts past its window as the server's new floor", () => {
    const { clock, advance } = fakeClock();
    const capacity = new AdaptiveCapacity({ min: 2, max: 10, floorWindowMs: 60_000, clock });
    capacity.observe(10, true);
    // The server moved (a slower machine): 30 ms for over a minute.
    for (let i = 0; i < 70; i++) (advance(1_000), capacity.observe(30, true));
    expect(capacity.floor).toBe(30);
    for (let i = 0; i < 100; i++) (advance(30), capacity.observe(30, true));
    expect(capacity.limit).toBe(10);
  });
});

it('refuses the removed BACKGROUND_CALLS_PER_ORGANIZATION with a message that says what replaced it', () => {
  expect(() => loadConfig({ BACKGROUND_CALLS_PER_ORGANIZATION: '2' })).toThrow(ConfigError);
  expect(() => loadConfig({ BACKGROUND_CALLS_PER_ORGANIZATION: '2' })).toThrow(/BACKGROUND_CALLS_PER_ORGANIZATION: removed.*BACKGROUND_CALLS_IN_FLIGHT/);
});
