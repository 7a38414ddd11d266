/**
 * Owns the `voice_calls` rows (Migration20261210000100_voice_calls): a call's first request
 * records the caller as the customer (through customers' `recordCustomerContact`), the call
 * as an inbound message (conversations' `createInboundMessage`) and, when a voice workflow
 * matches, its execution (executions' `recordExecution`), in one transaction; later requests
 * read and move the call's cursor (`answered`), its pending reply and its last prompt.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../../ids';
import { createInboundMessage } from '../../../conversations/conversation.writes';
import { recordCustomerContact } from '../../../customers/customer.writes';
import { recordEvent } from '../../../events/outbox';
import { type PendingExecution, recordExecution } from '../../../executions/execution.starter';
import type { ChannelConnection } from '../../channel.entity';
import type { CustomerReply } from '../../../../../temporal/executions.shared';
import type { VoiceItem } from '../../../../../temporal/voice.shared';

export interface VoiceCallRow {
  call_sid: string;
  organization_id: string;
  connection_id: string;
  execution_id: string | null;
  customer_id: string | null;
  answered: number;
  pending_reply: CustomerReply | null;
  last_prompt: VoiceItem | null;
  ended_at: Date | null;
}

/** What Twilio says about the call in every request. */
export interface CallParams {
  callSid: string;
  from: string;
  to: string;
}

export async function findCall(em: EntityManager, connectionId: string, callSid: string): Promise<VoiceCallRow | undefined> {
  const [row] = await em
    .getConnection()
    .execute<VoiceCallRow[]>(
      'select call_sid, organization_id, connection_id, execution_id, customer_id, answered, pending_reply, last_prompt, ended_at from voice_calls where call_sid = ? and connection_id = ?',
      [callSid, connectionId],
    );
  return row;
}

/** The organization's oldest active voice workflow triggered by calls (to this connection, or to any). */
export async function callWorkflowOf(em: EntityManager, c: ChannelConnection): Promise<string | undefined> {
  const [row] = await em.getConnection().execute<Array<{ id: string }>>(
    `select id from workflows
      where organization_id = ? and channel = 'voice' and status = 'active' and deleted_at is null
        and configuration->'trigger'->>'type' = 'call'
        and coalesce(configuration->'trigger'->>'channel_connection_id', ?) = ?
      order by created_at, id limit 1`,
    [c.organizationId, c.id, c.id],
  );
  return row?.id;
}

/**
 * Records the call's start: the caller (created on their first call, with `customer.created`),
 * the call as an inbound `[call]` message (`message.received`), the execution of `workflowId`
 * if any, and the `voice_calls` row. The caller commits; a second first request of the same
 * CallSid fails on the row's primary key.
 */
export async function recordCallStart(
  em: EntityManager,
  c: ChannelConnection,
  call: CallParams,
  workflowId: string | undefined,
): Promise<{ customerId: string; pending: PendingExecution | undefined }> {
  const organizationId = c.organizationId;
  const now = new Date();
  const customer = await recordCustomerContact(em, { organizationId, channel: 'voice', externalId: call.from, at: now });
  // The call's message starts the execution, as a message starts one on the other channels (conversation journeys follow it).
  const messageId = newId('message');
  const pending = workflowId
    ? await recordExecution(em, {
        organizationId,
        workflowId,
        customerId: customer.id,
        channel: 'voice',
        messageId,
        input: { message: '', call_sid: call.callSid, from: call.from, to: call.to, channel_connection_id: c.id },
      })
    : undefined;
  // The customer before the message that references it: these entities declare no relations, so the unit of work does not order them.
  await em.flush();
  const metadata = { type: 'call', call_sid: call.callSid, to: call.to, channel_connection_id: c.id };
  createInboundMessage(em, { id: messageId, organizationId, customerId: customer.id, channel: 'voice', text: '[call]', metadata, executionId: pending?.executionId ?? null, at: now });
  recordEvent(em, {
    organizationId,
    type: 'message.received',
    occurredAt: now,
    data: { message_id: messageId, customer_id: customer.id, external_id: call.from, channel: 'voice', text: '[call]', metadata, execution_id: pending?.executionId ?? null },
  });
  await em.flush();
  // em.execute: inside the caller's transaction (getConnection().execute would not be).
  await em.execute('insert into voice_calls (call_sid, organization_id, connection_id, execution_id, customer_id, from_number, to_number) values (?, ?, ?, ?, ?, ?, ?)', [
      call.callSid,
      organizationId,
      c.id,
      pending?.executionId ?? null,
      customer.id,
      call.from,
      call.to,
    ]);
  return { customerId: customer.id, pending };
}

/** Keeps the caller's reply until an answer after it is rendered (a redirected request sends it again). */
export async function keepPendingReply(em: EntityManager, callSid: string, reply: CustomerReply): Promise<void> {
  await em.getConnection().execute('update voice_calls set pending_reply = ? where call_sid = ?', [JSON.stringify(reply), callSid]);
}

/** An answer was rendered: the cursor moves on (never back), the pending reply is done, the last prompt kept. */
export async function recordAnswer(em: EntityManager, callSid: string, next: number, lastPrompt: VoiceItem | null): Promise<void> {
  await em
    .getConnection()
    .execute('update voice_calls set answered = greatest(answered, ?), pending_reply = null, last_prompt = coalesce(?::jsonb, last_prompt) where call_sid = ?', [
      next,
      lastPrompt === null ? null : JSON.stringify(lastPrompt),
      callSid,
    ]);
}

/**
 * Twilio's status callback said the call is over, with its `CallDuration` in seconds when it
 * was answered (the duration engagement analytics give the call's session); returns false
 * when the end was already recorded (a retried callback changes nothing).
 */
export async function recordCallEnd(em: EntityManager, callSid: string, status: string, durationSeconds: number | undefined): Promise<boolean> {
  const rows = await em
    .getConnection()
    .execute<Array<{ call_sid: string }>>(
      'update voice_calls set ended_at = now(), end_status = ?, duration_seconds = ? where call_sid = ? and ended_at is null returning call_sid',
      [status, durationSeconds ?? null, callSid],
    );
  return rows.length > 0;
}

/** The execution's outbound transcript from the `from`-th message on: what a run that completed before its last turn said. */
export async function outboundSince(em: EntityManager, executionId: string, from: number): Promise<string[]> {
  const rows = await em
    .getConnection()
    .execute<Array<{ text: string }>>("select text from messages where execution_id = ? and direction = 'outbound' order by created_at, id offset ?", [executionId, from]);
  return rows.map((r) => r.text);
}

/** How long a caller's reply waits for its question's wait to open (see `untilWaitOpen`). */
const WAIT_OPEN_BOUND_MS = 2_000;

/**
 * Under the ask-ahead patch a caller hears a question before its prompt activity has opened
 * the form's wait (the activity runs while Twilio speaks). A reply faster than that activity
 * (a loaded worker, a test's caller that answers at once) would be recorded as a message
 * that opens a conversation of its own, not as the answer, and counted so by the journey
 * analytics. So a reply waits, briefly, until the execution waits or is over; Twilio speaks
 * for seconds before it sends one, so in practice the wait is open already.
 */
export async function untilWaitOpen(em: EntityManager, executionId: string): Promise<void> {
  const deadline = Date.now() + WAIT_OPEN_BOUND_MS;
  for (;;) {
    const [row] = await em
      .getConnection()
      .execute<Array<{ open: boolean }>>("select waiting_key is not null or status <> 'running' as open from executions where id = ?", [executionId]);
    if (!row || row.open || Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
