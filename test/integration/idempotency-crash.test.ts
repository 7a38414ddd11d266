/**
 * An `Idempotency-Key` claim cut off by a crash: an API process is SIGKILLed after its
 * request committed and before it stored the response (`message.after_commit`). The
 * client's retry with the same key, on another API, is run once the claim's lease lapses
 * (seconds; IDEMPOTENCY_LEASE_MS), instead of 409 IDEMPOTENCY_KEY_IN_USE for 24 hours;
 * its answer is then stored and replayed as usual.
 */
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { freePort, type SpawnedProcess, spawnService } from '../helpers/process';
import { waitFor } from '../helpers/wait';

jest.setTimeout(120_000);

describe('idempotency keys across a crashed API', () => {
  let t: TestApp;
  let key: string;
  let api: SpawnedProcess | undefined;
  beforeAll(async () => {
    t = await createTestApp();
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await api?.kill('SIGKILL');
    await t.close();
  });

  it('a retry on another API runs once the dead request’s claim lapses, then replays', async () => {
    const port = await freePort();
    api = spawnService('api', t, { PORT: String(port), FAILPOINTS: 'message.after_commit', IDEMPOTENCY_LEASE_MS: '1000' });
    await api.waitForLine(/API listening/, 60_000);
    const message = { channel: 'whatsapp', customer_id: 'idem-crash', message: 'hello there', provider_message_id: 'wamid.idem-crash' };
    const headers = { ...bearer(key), 'idempotency-key': 'crash-key-1' };
    const first = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(message),
    }).then(
      (r) => r.status,
      () => 'connection lost',
    );
    expect(first).toBe('connection lost');
    await api.exited;
    expect(api.lines.join('\n')).toContain('failpoint message.after_commit: SIGKILL');
    const [committed] = await t.query<{ id: string }>('select id from messages where provider_message_id = ?', [message.provider_message_id]);
    expect(committed).toBeDefined();

    // The client retries with its key on another API (the test app): 409 while the lease
    // may still be held, then the request runs (a redelivery of the committed message).
    const seen = new Set<number>();
    const retried = await waitFor(
      async () => {
        const res = await t.request.post('/v1/messages').set(headers).send(message);
        seen.add(res.status);
        if (res.status === 409) expect(res.body.error.code).toBe('IDEMPOTENCY_KEY_IN_USE');
        return res.status === 409 ? undefined : res;
      },
      'the retry to be run',
      15_000,
    );
    expect([...seen].filter((s) => s !== 409 && s !== retried.status)).toEqual([]);
    expect(retried.status).toBe(200);
    expect(retried.body.data.message_id).toBe(committed!.id);
    expect(await t.query('select id from messages where provider_message_id = ?', [message.provider_message_id])).toHaveLength(1);

    // Stored now: the next retry is a replay of that answer.
    const replay = await t.request.post('/v1/messages').set(headers).send(message);
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(retried.body);
  });
});
