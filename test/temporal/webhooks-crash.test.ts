/**
 * Durability of delivery: the worker process (with its event dispatcher) is SIGKILLed while
 * an attempt is in flight; a restarted worker still delivers the event, with the same
 * event id, as the next attempt. The killed attempt never ended, so it has no log row.
 */
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver';
import { deliveryWorkflowId } from '../../temporal/webhooks.shared';
import { type SpawnedProcess, spawnService } from '../helpers/process';
import { recordEvent } from '../../src/modules/events/outbox';
import type { EntityManager } from '@mikro-orm/postgresql';

let t: TestApp;
let receiver: HttpsReceiver;
const workers: SpawnedProcess[] = [];

beforeAll(async () => {
  receiver = await startHttpsReceiver((_req, n) => (n === 0 ? 'hang' : { status: 200 }));
  t = await createTestApp({ WEBHOOK_EXTRA_CA_FILE: receiver.caFile });
});
afterAll(async () => {
  for (const w of workers) await w.kill('SIGKILL').catch(() => undefined);
  await t?.close();
  await receiver?.close();
});

function startWorkerProcess(): SpawnedProcess {
  const proc = spawnService('worker', t, {
    DATABASE_POOL_MAX: '3',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_EXTRA_CA_FILE: receiver.caFile,
    WEBHOOK_TIMEOUT_MS: '2000',
    // Test-only: a 2 s margin around the attempt instead of 5 s, so the delivery's workflow
    // task times out 6 s after the killed worker took it instead of 10 s (the wait before
    // the restarted worker gets it); still above the attempt's 4 s by a fifth.
    WEBHOOK_ATTEMPT_MARGIN_MS: '2000',
    WEBHOOK_DISPATCH_POLL_MS: '250',
  });
  workers.push(proc);
  return proc;
}

test('a worker SIGKILLed mid-delivery and restarted still delivers the event, same id, next attempt', async () => {
  const orgId = await t.createOrg();
  const auth = bearer((await t.createKey('admin', orgId)).key);
  const created = await t.request
    .post('/v1/webhooks')
    .set(auth)
    .send({ url: receiver.url('/crash'), events: ['workflow.failed'], retry_policy: { max_retries: 3, retry_delay_ms: 100 } });
  expect(created.status).toBe(201);
  const hookId = created.body.data.id as string;

  const first = startWorkerProcess();
  await first.waitForLine(/worker running/, 60_000);
  const em = t.services.orm.em.fork() as EntityManager;
  const event = recordEvent(em, { organizationId: orgId, type: 'workflow.failed', data: { workflow_id: 'wf_x', execution_id: 'exec_x', status: 'failed', duration_ms: 5, customer_id: null, channel: 'voice' } });
  await em.flush();

  const [inFlight] = await receiver.waitFor('/crash', 1, 30_000);
  expect(inFlight!.headers['x-service-event-id']).toBe(event.id);
  await first.kill('SIGKILL');

  const second = startWorkerProcess();
  await second.waitForLine(/worker running/, 60_000);
  const reqs = await receiver.waitFor('/crash', 2, 60_000);
  expect(reqs.map((r) => r.headers['x-service-event-id'])).toEqual([event.id, event.id]);
  expect(reqs.map((r) => JSON.parse(r.body).id)).toEqual([event.id, event.id]);
  expect(reqs[1]!.headers['x-service-delivery-attempt']).toBe('2');
  expect(JSON.parse(reqs[1]!.body).metadata.retry_count).toBe(1);

  // Read only once nothing more can arrive: the delivery workflow has closed and the worker
  // has drained and exited, so a late duplicate would be among what is counted below.
  await t.services.temporal.client.workflow.getHandle(deliveryWorkflowId(event.id, hookId)).result();
  await second.kill('SIGTERM');
  const logs = (await t.request.get(`/v1/webhooks/${hookId}/logs`).set(auth)).body.data;
  expect(logs).toHaveLength(1);
  expect(logs[0]).toMatchObject({ event_id: event.id, attempt: 2, status: 'success', response_code: 200 });
  expect(receiver.requestsTo('/crash')).toHaveLength(2);
  // Two worker processes start and boot the app: minutes on a loaded 2-core machine.
}, 240_000);
