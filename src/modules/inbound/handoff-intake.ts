/**
 * The inbound message of a customer in a handoff (handoffs/handoff.service.ts,
 * docs/handoff.md): recorded (the customer counted, the message, `message.received`) and
 * nothing else: no execution starts, no waiting form is answered. ONE statement, which also
 * decides whether the handoff is in force: when it is not, it writes nothing and the message
 * takes the usual path (message.writes.ts). It composes the owners' fragments, as that
 * statement does (customers: `countInboundCustomerCtes`; conversations:
 * `insertInboundMessageSql`; events: `insertEventsSql`).
 *
 * With an `Idempotency-Key`, the statement also records the request's recovery point in the
 * key's claim, as the usual path's does (message.writes.ts): `{message_id, status: "ignored"}`.
 *
 * A message whose check ran just before a handoff committed acts as if it had arrived before
 * it (the handoff then closes the form it may open only if it was already waiting).
 */
import { hotQuery, numberedPlaceholders } from '../../db/hot-query';
import { claimLostCheckSql, type HeldClaim, recoveryPointCteSql } from '../../http/idempotency';
import { newId } from '../../ids';
import { insertInboundMessageSql } from '../conversations/conversation.writes';
import { countInboundCustomerCtes } from '../customers/customer.writes';
import { insertEventsSql, outboxEventJson as eventRow, TRACED_EVENT_COLUMNS } from '../events/outbox';
import type { InboundServices } from './inbound-state';
import type { CompanionWrite, InboundMessage } from './inbound-message';
import { messageReceivedEvent, Redelivery } from './message.writes';

/** The message's outcome while its customer is handed off. */
export const HANDED_OFF_REASON = 'handed_off';

/** Whether the statement wrote the message (the customer is handed off, and it is no redelivery). */
const WRITTEN = 'exists (select 1 from cust)';

const write = (idempotent: boolean, companion?: CompanionWrite) => ({
  name: `${idempotent ? 'inbound-message-write-handed-off-idempotent' : 'inbound-message-write-handed-off'}${companion ? `+${companion.name}` : ''}`,
  text: `with handed as (
      select c.id from customers c
       where c.organization_id = $1::text and c.channel = $2::text and c.external_id = $3::text
         and exists (select 1 from customer_handoffs h where h.customer_id = c.id and h.ended_at is null and h.until > now())
    ),
    dup as (
      select 1 from messages where organization_id = $1::text and channel = $2::text and provider_message_id = $9::text
    ),
    ${countInboundCustomerCtes(
      { organizationId: '$1::text', channel: '$2::text', externalId: '$3::text', customerId: '(select id from handed)', name: '$4::text' },
      'exists (select 1 from dup)',
    )},
    msg as (
      ${insertInboundMessageSql(
        {
          id: '$5::text', organizationId: '$1::text', customerId: 'cust.id', channel: '$2::text', text: '$6::text', metadata: '$7::jsonb',
          language: '$8::text', executionId: 'null', replyToWait: 'null', providerMessageId: '$9::text', deliveredAt: 'null', rollupWithExecution: 'false',
        },
        'from cust',
      )}
    ),
    ev as (
      ${insertEventsSql(`
      select r.id, r.organization_id, r.type, jsonb_set(r.data, '{customer_id}', to_jsonb(cust.id)), r.created_at, r.trace_context
        from jsonb_populate_record(null::events, $10::jsonb) r, cust
      union all
      select r.id, r.organization_id, r.type, jsonb_set(r.data, '{customer_id}', to_jsonb(cust.id)), r.created_at, r.trace_context
        from jsonb_populate_record(null::events, $11::jsonb) r, cust
       where $11::jsonb is not null and cust.old_name is distinct from $4::text`, TRACED_EVENT_COLUMNS)}
    )${idempotent ? `,
    idem as (
      ${recoveryPointCteSql({
        organizationId: '$1::text', key: '$12::text', token: '$13::text', point: `jsonb_build_object('message_id', $5::text, 'status', 'ignored')`, when: WRITTEN,
      })}
    )` : ''}${companion ? `,
    companion as (
      ${numberedPlaceholders(companion.sql, idempotent ? 14 : 12)}
    )` : ''}
    select (select id from handed) as customer_id, exists (select 1 from dup) as duplicate${idempotent ? `, ${claimLostCheckSql('idem', WRITTEN)} as claim_held` : ''}`,
});
const WRITES = [write(false), write(true)] as const;
/** With a companion write (message.writes.ts): by its name, then as WRITES. */
const COMPANION_WRITES = new Map<string, Array<{ name: string; text: string }>>();
const writeStatement = (idempotent: boolean, companion: CompanionWrite | undefined) => {
  if (!companion) return WRITES[idempotent ? 1 : 0];
  let variants = COMPANION_WRITES.get(companion.name);
  if (!variants) COMPANION_WRITES.set(companion.name, (variants = [write(false, companion), write(true, companion)]));
  return variants[idempotent ? 1 : 0]!;
};

/**
 * Records `msg` if its customer is handed off: the message's id and customer id, or
 * undefined when no handoff is in force (nothing written). Throws `Redelivery` for a
 * provider message id already received.
 */
export async function recordIfHandedOff(
  services: InboundServices,
  organizationId: string,
  msg: InboundMessage,
  language: string | undefined,
  claim?: HeldClaim,
  companion?: CompanionWrite,
): Promise<{ messageId: string; customerId: string } | undefined> {
  const messageId = newId('message');
  const now = new Date();
  const name = msg.customer?.name ?? null;
  const received = messageReceivedEvent(organizationId, messageId, null, msg, now);
  const renamed =
    name === null
      ? null
      : eventRow({
          organizationId,
          type: 'customer.updated',
          occurredAt: now,
          data: { customer_id: null, external_id: msg.customer_id, channel: msg.channel, name, changed: ['name'] },
        });
  const write = hotQuery<{ customer_id: string | null; duplicate: boolean }>(services.hotPool, writeStatement(claim !== undefined, companion), [
    organizationId, // $1
    msg.channel, // $2
    msg.customer_id, // $3
    name, // $4
    messageId, // $5
    msg.message, // $6
    JSON.stringify(msg.metadata ?? {}), // $7
    language ?? null, // $8
    msg.provider_message_id ?? null, // $9
    JSON.stringify(received), // $10
    renamed === null ? null : JSON.stringify(renamed), // $11
    ...(claim ? [claim.key, claim.token] : []), // $12, $13
    ...(companion?.bindings ?? []),
  ]);
  // A first delivery committed after the statement's snapshot: its unique index answers.
  const [row] = await write.catch((err: unknown) => {
    throw (err as { constraint?: string }).constraint === 'messages_provider_message_id_key' ? new Redelivery() : err;
  });
  if (!row?.customer_id) return undefined;
  if (row.duplicate) throw new Redelivery();
  return { messageId, customerId: row.customer_id };
}
