/**
 * Owns an inbound reply's way into the execution waiting for it: the inbound message's
 * statement (inbound/message.writes.ts) claims and closes the execution's open form wait;
 * after the commit `deliverReply` sends the `customerReply` signal and stamps
 * `messages.delivered_at`. What was committed but never confirmed is re-delivered by the
 * executions reconciler (`redeliverReplies`). The workflow drops a reply it already has, by message id, so a
 * second delivery is harmless.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Services } from '../../services';
import { customerReplySignal, executionWorkflowId } from '../../../temporal/executions.shared';
import { markReplyDelivered } from '../conversations/conversation.writes';
import { boundedTemporalCall, RECONCILE_TEMPORAL_TIMEOUT_MS } from '../../temporal-calls';

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
    // Names the reply in the log line of a cut-off signal (left to the reconciler).
    { execution_id: r.executionId, message_id: r.messageId },
  );
  if (!delivered) return false;
  await markReplyDelivered(services.orm.em.fork(), r.messageId);
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
