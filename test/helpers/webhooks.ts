/**
 * Webhook test kit: an app whose sender trusts the test receiver's CA, a real worker and
 * event dispatcher on the app's task queue, and small helpers to create webhooks, emit
 * outbox events (as the other modules do, through `recordEvent`) and read logs.
 */
import { createHmac } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { createActivities } from '../../temporal/activities';
import { recordEvent } from '../../src/modules/events/outbox';
import type { EventType } from '../../src/modules/events/event.entity';
import { EventDispatcher } from '../../src/modules/webhooks/event-dispatcher';
import { bearer, createTestApp, type TestApp } from './app';
import { startHttpsReceiver, type Answer, type HttpsReceiver, type ReceivedRequest } from './https-receiver';
import { startTestWorker, type TestWorker } from './temporal';

export interface WebhookKit {
  t: TestApp;
  receiver: HttpsReceiver;
  worker: TestWorker;
  dispatcher: EventDispatcher;
  /** Answers for a receiver path: `n` counts requests to that path from 0. Default 200. */
  script(path: string, answer: (n: number) => Answer): void;
  /** A fresh organization and admin key, so webhooks of different tests never share events. */
  tenant(): Promise<{ orgId: string; auth: Record<string, string> }>;
  createHook(auth: Record<string, string>, path: string, body?: Record<string, unknown>): Promise<HookOut>;
  emit(orgId: string, type: EventType, data?: Record<string, unknown>): Promise<string>;
  logs(auth: Record<string, string>, hookId: string, query?: string): Promise<LogOut[]>;
  close(): Promise<void>;
}

export interface HookOut {
  id: string;
  secret: string;
  url: string;
  active: boolean;
}

export interface LogOut {
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  response_code: number;
  response_time_ms: number;
  attempt: number;
  delivered_at: string;
  error_message: string | null;
}

export async function startWebhookKit(env: Record<string, string> = {}): Promise<WebhookKit> {
  const scripts = new Map<string, (n: number) => Answer>();
  const receiver = await startHttpsReceiver((req, n) => scripts.get(req.path)?.(n) ?? { status: 200, body: 'ok' });
  const t = await createTestApp({
    WEBHOOK_EXTRA_CA_FILE: receiver.caFile,
    WEBHOOK_TIMEOUT_MS: '1500',
    WEBHOOK_DISPATCH_POLL_MS: '250',
    ...env,
  });
  const worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
  const dispatcher = new EventDispatcher(t.services);
  dispatcher.start();
  return {
    t,
    receiver,
    worker,
    dispatcher,
    script: (path, answer) => void scripts.set(path, answer),
    async tenant() {
      const orgId = await t.createOrg();
      const { key } = await t.createKey('admin', orgId);
      return { orgId, auth: bearer(key) };
    },
    async createHook(auth, path, body = {}) {
      const res = await t.request
        .post('/v1/webhooks')
        .set(auth)
        .send({ url: receiver.url(path), events: ['workflow.completed'], retry_policy: { max_retries: 3, retry_delay_ms: 100 }, ...body });
      if (res.status !== 201) throw new Error(`create webhook: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.data as HookOut;
    },
    async emit(orgId, type, data = { workflow_id: 'wf_test', execution_id: 'exec_test', status: 'success', duration_ms: 12, customer_id: 'cus_test', channel: 'whatsapp' }) {
      const em = t.services.orm.em.fork() as EntityManager;
      const event = recordEvent(em, { organizationId: orgId, type, data });
      await em.flush();
      return event.id;
    },
    async logs(auth, hookId, query = '') {
      const res = await t.request.get(`/v1/webhooks/${hookId}/logs?limit=100${query}`).set(auth);
      if (res.status !== 200) throw new Error(`logs: ${res.status} ${JSON.stringify(res.body)}`);
      return (res.body.data as LogOut[]).slice().sort((a, b) => a.attempt - b.attempt);
    },
    async close() {
      await dispatcher.stop();
      await worker.stop();
      await t.close();
      await receiver.close();
    },
  };
}

export const hexSignature = (secret: string, body: string) => createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');

/** Verifies the Standard Webhooks headers as a receiver would (raw-format key). */
export function verifyStandardWebhook(secret: string, req: ReceivedRequest): boolean {
  const id = req.headers['webhook-id'];
  const ts = req.headers['webhook-timestamp'];
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${id}.${ts}.${req.body}`).digest('base64');
  return (req.headers['webhook-signature'] ?? '').split(' ').some((s) => s === `v1,${expected}`);
}
