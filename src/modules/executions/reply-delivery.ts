/**
 * Owns an inbound reply's way into the execution waiting for it: `claimWait` closes the
 * execution's open form wait inside the inbound message's transaction; after the commit
 * `deliverReply` sends the `customerReply` signal and stamps `messages.delivered_at`. What
 * was committed but never confirmed is re-delivered by the executions reconciler
 * (`redeliverReplies`). The workflow drops a reply it already has, by message id, so a
 * second delivery is harmless.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Services } from '../../services';
import { customerReplySignal, executionWorkflowId } from '../../../temporal/executions.shared';
import { boundedTemporalCall, RECONCILE_TEMPORAL_TIMEOUT_MS } from '../../temporal-calls';

/** The form wait a reply claimed: the execution and the prompt's dedupe key. */
export interface ClaimedWait {
  id: string;
  workflow_id: string;
  waiting_key: string | null;
}

/**
 * Claims the open form wait of this customer's newest waiting execution on the channel, if
 * any: the row lock orders the claim against the form opening or closing (timeout) that
 * wait, so exactly one of them wins, and the wait is closed so it takes one reply only.
 * (The customer upsert before this already serialises the customer's own messages.)
 */
export async function claimWait(tx: EntityManager, organizationId: string, customerId: string, channel: string): Promise<ClaimedWait | undefined> {
  // Lock and clear in one statement (one round trip of the message's transaction), returning the wait as it was.
  const [waiting] = await tx.execute<ClaimedWait[]>(
    `with w as (
       select id, workflow_id, waiting_key from executions
        where organization_id = ? and customer_id = ? and channel = ? and status = 'running' and waiting_node_id is not null
        order by started_at desc limit 1 for update
     ), cleared as (
       update executions e set waiting_node_id = null, waiting_key = null from w where e.id = w.id
     )
     select id, workflow_id, waiting_key from w`,
    [organizationId, customerId, channel],
  );
  return waiting;
}

/**
 * Signals a reply to its execution and stamps `delivered_at`. A Temporal outage (or a
 * signal slower than TEMPORAL_CALL_TIMEOUT_MS) leaves the row unstamped for the
 * reconciler; a run that no longer exists is stamped too, there is nothing left to deliver
 * to (it took the reply from PostgreSQL when its timeout fired, or it was cancelled).
 */
export async function deliverReply(
  services: Services,
  r: { messageId: string; executionId: string; text: string },
  timeoutMs?: number,
): Promise<boolean> {
  const delivered = await boundedTemporalCall(
    services,
    () => services.temporal.client.workflow.getHandle(executionWorkflowId(r.executionId)).signal(customerReplySignal, { messageId: r.messageId, text: r.text }),
    (err) => err instanceof WorkflowNotFoundError,
    timeoutMs,
  );
  if (!delivered) return false;
  await services.orm.em.fork().getConnection().execute('update messages set delivered_at = now() where id = ? and delivered_at is null', [r.messageId]);
  return true;
}

/** Re-delivers inbound replies whose signal was never confirmed (crash after the commit). */
export async function redeliverReplies(services: Services, graceMs: number): Promise<number> {
  // Only replies to a waiting execution are signalled: a message that started executions is
  // linked to the first of them and committed as delivered, so it is not selected here.
  const rows = await services.orm.em
    .fork()
    .getConnection()
    .execute<Array<{ id: string; execution_id: string; text: string }>>(
      `select m.id, m.execution_id, m.text from messages m
        where m.direction = 'inbound' and m.execution_id is not null and m.delivered_at is null
          and m.created_at < now() - (? * interval '1 millisecond')
          and not exists (select 1 from executions e where e.id = m.execution_id and e.message_id = m.id)
        order by m.created_at limit 100`,
      [graceMs],
    );
  let n = 0;
  for (const row of rows) {
    if (await deliverReply(services, { messageId: row.id, executionId: row.execution_id, text: row.text }, RECONCILE_TEMPORAL_TIMEOUT_MS)) n++;
  }
  return n;
}
