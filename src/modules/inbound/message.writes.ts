/**
 * The write of an inbound message (`POST /v1/messages`): what the message may need is
 * known before (`message-targets.ts`: its matching candidates and its customer, from
 * memory or read), then ONE statement writes all of it, atomic on its own. It is a named
 * statement on the hot pool (src/db/hot-query.ts), so PostgreSQL plans it once per
 * connection.
 *
 * Why one statement instead of a transaction: the transaction was eleven round trips (three
 * reads, BEGIN, the customer upsert, the wait claim, the message, the executions, the
 * firings, the events, COMMIT), and under load each round trip waits for the API's event
 * loop and for a core: that, not PostgreSQL's work, was the answer time
 * (docs/performance.md). The write statement's data-modifying CTEs do in one pass what the
 * transaction did in order:
 *
 * 1. the customer: inserted when its id is not known (neither in memory nor found by a
 *    read), else counted, which locks its row and so orders the customer's own concurrent
 *    messages. When the customer exists after all (another process or a concurrent first
 *    message created it), the insert does nothing, every write below is skipped with it,
 *    and `writeMessage` throws `CustomerExists`: the caller reads and writes again. No
 *    error is raised in PostgreSQL for this (a returning customer that this process has
 *    not seen yet is the common case after a restart);
 * 2. the wait claim: the customer's newest open form wait on the channel, locked and closed
 *    (`for update`: exactly one of a reply, the form opening and its timeout wins);
 * 3. unless a wait was claimed, the debounced bursts it joins or opens
 *    (`joinOrOpenBurstsCtes`, debounce/debounce.writes.ts): a target with `debounce_ms`
 *    that the message matches opens a burst instead of starting an execution, and any
 *    message of the customer joins the open burst of any debounced target of its channel
 *    (docs/executions.md, "Debounced bursts"); then
 *    the executions, firings and their events the message starts.
 *    Each execution takes its workflow's slot for the customer (`concurrency_key`,
 *    `configuration.concurrency`): one whose slot a running execution holds is not inserted
 *    (the unique index decides, waiting for a concurrent message's statement), its firing is
 *    recorded `skipped` and its `workflow.started` event is dropped. A reply (2) is never
 *    subject to the rule;
 * 4. the message, linked to the claimed execution (a reply) or to the first execution it
 *    started (delivered already), and its `message.received` event;
 * 5. `customer.created`, or `customer.updated` when the name changed;
 * 6. the check that the organization's triggers and workflows are still those the plan was
 *    made from (`check_message_target_version`): when they changed, the statement fails
 *    with `WAT01` and undoes itself, and the caller reads them again and writes again.
 *
 * A caller's `CompanionWrite` (the channel hook's customer window) is one more CTE.
 *
 * With an `Idempotency-Key`, the statement also records the request's recovery point (the
 * message's id) in the key's claim (`recoveryPointCteSql`, src/http/idempotency.ts), and
 * fails when the claim was taken over: the message and the point commit together, so a
 * retry whose first try died after the commit answers from the message instead of writing
 * it again.
 *
 * A redelivered provider message id is found by the statement itself (`dup`, in its
 * snapshot): the customer is then not written, nor anything that needs it, and
 * `writeMessage` throws `Redelivery`; the caller answers with the first message's outcome.
 * A first delivery committed after the statement's snapshot fails the message insert on
 * its unique index instead, which undoes the whole statement, with the same answer. So a
 * message with a provider id costs no read before its write.
 *
 * The inbound module owns no table: each write of the statement is a fragment exported by
 * the table's owner (customers: `insertInboundCustomerCte` / `countInboundCustomerCtes`;
 * executions: `claimOpenWaitCtes`, `insertExecutionRowsSql`; triggers: `insertFiringRowsSql`;
 * debounce: `joinOrOpenBurstsCtes`;
 * conversations: `insertInboundMessageSql`; events: `insertEventsSql`), composed here into
 * the one statement (docs/architecture.md, "Table owners").
 *
 * The rows and event payloads are built here with the same builders the other paths use
 * (`workflowEventData`, `executionWorkflowInput`, `firingEventData`, `firingMetadata`); the
 * customer's id is known before the statement (from memory, read, or generated for a new
 * customer), so no payload depends on what the statement finds except the claim, which it
 * adds itself.
 */
import type { HotPool } from '../../db/hot-query';
import { claimLostCheckSql, type HeldClaim, recoveryPointCteSql } from '../../http/idempotency';
import { hotQuery, numberedPlaceholders } from '../../db/hot-query';
import { newId } from '../../ids';
import { insertInboundMessageSql } from '../conversations/conversation.writes';
import { countInboundCustomerCtes, type InboundCustomerSql, insertInboundCustomerCte } from '../customers/customer.writes';
import { insertEventsSql, outboxEventJson as eventRow, TRACED_EVENT_COLUMNS } from '../events/outbox';
import { cancelSlotHoldersCtes, claimOpenWaitCtes } from '../executions/execution.recorder';
import {
  concurrencyKey,
  type ExecutionStartRow,
  executionWorkflowInput,
  insertExecutionRowsSql,
  insertQueuedExecutionRowsSql,
  type PendingExecution,
  workflowEventData,
} from '../executions/execution.starter';
import { type BurstTargetRow, burstMissedSql, joinOrOpenBurstsCtes } from '../debounce/debounce.writes';
import { type FiringRow, firingEventData, firingMetadata, insertFiringRowsSql } from '../triggers/trigger-firing';
import type { CompanionWrite, InboundMessage } from './inbound-message';
import type { MessageTargets } from './message-targets';
import { planConflicts, type ReplacedExecution, type SkippedStart, sortStarts } from './message.conflicts';

/** The customer the write was to create exists already: nothing was written (read its id, write again). */
export class CustomerExists extends Error {}

/** The provider message id was already received on the channel: nothing was written. */
export class Redelivery extends Error {}

/** The open form wait a reply claimed: the execution and the prompt's dedupe key. */
export interface ClaimedWait {
  id: string;
  workflow_id: string;
  waiting_key: string | null;
}

/**
 * The rows a message that is not a reply starts. One execution per workflow: the oldest
 * matching trigger gets the attribution (a firing with its `trigger.activated`), then the
 * workflows matched by their own keywords. A trigger or workflow changed since the read acts
 * as it was read, as if the message had arrived a moment earlier.
 */
function planStarts(targets: MessageTargets, m: { organizationId: string; customerId: string; messageId: string; msg: InboundMessage; language: string | undefined; now: Date }) {
  const { organizationId, customerId, messageId, msg, language, now } = m;
  const executions: ExecutionStartRow[] = [];
  const firings: FiringRow[] = [];
  const events: object[] = [];
  const starts: PendingExecution[] = [];
  /** The concurrency slot of each start, in the order of `starts`. */
  const keys: string[] = [];
  const start = (workflowId: string, triggerId: string | null, input: Record<string, unknown>) => {
    const wf = targets.workflows.get(workflowId)!;
    const id = newId('execution');
    executions.push({
      id, organization_id: organizationId, workflow_id: workflowId, revision: wf.revision, trigger_id: triggerId, customer_id: customerId,
      channel: msg.channel, status: 'running', input, message_id: messageId, started_at: now,
      // Every workflow's rule is per customer with one slot (DEFAULT_CONCURRENCY when unset).
      concurrency_key: concurrencyKey(workflowId, customerId),
    });
    events.push(eventRow({
      organizationId,
      type: 'workflow.started',
      data: workflowEventData({ workflowId, id, status: 'running', durationMs: null, customerId, channel: msg.channel }),
      occurredAt: now,
    }));
    const workflowInput = executionWorkflowInput(
      { id, organizationId, workflowId, revision: wf.revision, channel: msg.channel, customerId, input },
      { name: wf.name, nodes: wf.configuration!.nodes },
    );
    starts.push({ executionId: id, triggerId, customerExternalId: msg.customer_id, workflowInput });
    keys.push(concurrencyKey(workflowId, customerId));
    return id;
  };
  const covered = new Set<string>();
  // A debounced target the message matches opens a burst instead of starting (or joins the open one).
  const bursts: BurstTargetRow[] = targets.debounced.map((d) => ({
    id: newId('debounceBurst'), target: d.triggerId ?? d.workflowId, workflow_id: d.workflowId, trigger_id: d.triggerId,
    debounce_ms: d.debounceMs, max_wait_ms: d.maxWaitMs, opens: false,
  }));
  const debounces = (target: string) => {
    const burst = bursts.find((b) => b.target === target);
    if (burst) burst.opens = true;
    return burst !== undefined;
  };
  for (const { triggerId, workflowId } of targets.triggers) {
    if (covered.has(workflowId)) continue;
    covered.add(workflowId);
    if (debounces(triggerId)) continue;
    const input = { message: msg.message, customer_id: customerId, channel: msg.channel };
    const executionId = start(workflowId, triggerId, input);
    const firingId = newId('triggerExecution');
    firings.push({
      id: firingId, organization_id: organizationId, trigger_id: triggerId, workflow_id: workflowId, execution_id: executionId, customer_id: customerId,
      channel: msg.channel, status: 'running', input, metadata: firingMetadata({ message_id: messageId, ...(language ? { language } : {}) }, now), triggered_at: now,
    });
    events.push(eventRow({
      organizationId,
      type: 'trigger.activated',
      occurredAt: now,
      data: firingEventData({ triggerId, firingId, type: 'message', workflowId, channel: msg.channel, customerId, now }),
    }));
  }
  for (const workflowId of targets.configured) {
    if (covered.has(workflowId)) continue;
    covered.add(workflowId);
    if (debounces(workflowId)) continue;
    start(workflowId, null, { message: msg.message });
  }
  return { executions, firings, events, starts, keys, bursts, conflicts: planConflicts(targets, starts, keys) };
}

/** The statement's customer, as its placeholders. */
const CUSTOMER: InboundCustomerSql = { organizationId: '$1::text', channel: '$2::text', externalId: '$3::text', customerId: '$4::text', name: '$5::text' };

/** Whether the message starts executions: its customer was written and it claimed no wait. */
const STARTS = 'not exists (select 1 from claim) and exists (select 1 from cust)';

/**
 * Whether the message replaces running executions: it starts, and a target's rule is
 * `replace`. Checked on the parameter first, so a message without a replace key never
 * reaches the slot holders' scan: the statement's plan is cached per connection, and a
 * plan made while the table was small scanned every running execution of a flooding
 * organization for no key at all (0.7 ms of each of its messages; docs/performance.md).
 */
const REPLACES = `jsonb_array_length($20::jsonb) > 0 and ${STARTS}`;

/** Whether the message started the execution it is linked to (not a reply): delivered at once, and counted with it in the rollups. */
const STARTED_ITS_EXECUTION = 'claim.id is null and exists (select 1 from first_started)';

/**
 * The write statement, composed of the tables' owners' fragments (customers, executions,
 * triggers, conversations, events); `customer` is its customer CTE: insert (new customer) or
 * count (known one), skipped for a redelivery (`dup`), and every other write needs the
 * customer's row.
 */
const write = (name: string, customer: string, idempotent: boolean, companion: CompanionWrite | undefined) => ({
  name: `${idempotent ? `${name}-idempotent` : name}${companion ? `+${companion.name}` : ''}`,
  text: `with dup as (
      select 1 from messages where organization_id = $1::text and channel = $2::text and provider_message_id = $14::text
    ),
    ${customer},
    ${claimOpenWaitCtes({ organizationId: '$1::text', customerId: '(select id from cust)', channel: '$2::text' })},
    ${joinOrOpenBurstsCtes({ organizationId: '$1::text', customerId: '(select id from cust)', channel: '$2::text', messageId: '$6::text', text: '$7::text', targetsJson: '$22', when: STARTS })},
    ${cancelSlotHoldersCtes('$20', REPLACES)},
    ex as (
      -- After \`replaced\` (referenced): the replaced holders leave the slot before the new rows take it.
      ${insertExecutionRowsSql('$11', `${STARTS} and (select count(*) from replaced) >= 0`)}
    ),
    queued as (
      ${insertQueuedExecutionRowsSql('$11', STARTS, '$19', 'ex')}
    ),
    first_started as (
      select p.id from jsonb_array_elements_text($10::jsonb) with ordinality p(id, n) where p.id in (select id from ex) order by p.n limit 1
    ),
    fired as (
      ${insertFiringRowsSql('$12', STARTS, '(select id from ex union all select id from queued)', '$19')}
    ),
    msg as (
      ${insertInboundMessageSql(
        {
          id: '$6::text', organizationId: '$1::text', customerId: '$4::text', channel: '$2::text', text: '$7::text', metadata: '$8::jsonb',
          language: '$9::text', executionId: 'coalesce(claim.id, (select id from first_started))', replyToWait: 'claim.waiting_key', providerMessageId: '$14::text',
          deliveredAt: `case when ${STARTED_ITS_EXECUTION} then now() end`,
          rollupWithExecution: STARTED_ITS_EXECUTION,
        },
        'from (select 1) one left join claim on true where exists (select 1 from cust)',
      )}
    ),
    ev as (
      ${insertEventsSql(`
      select ${TRACED_EVENT_COLUMNS} from jsonb_populate_recordset(null::events, $13::jsonb)
       where ${STARTS} and (type <> 'workflow.started' or data->>'execution_id' in (select id from ex))
      union all
      select r.id, r.organization_id, r.type, case when claim.id is null then r.data else jsonb_set(r.data, '{execution_id}', to_jsonb(claim.id)) end, r.created_at, r.trace_context
        from jsonb_populate_record(null::events, $15::jsonb) r left join claim on true where exists (select 1 from cust)
      union all
      select ${TRACED_EVENT_COLUMNS} from jsonb_populate_record(null::events, $16::jsonb) where (select created from cust)
      union all
      select ${TRACED_EVENT_COLUMNS} from jsonb_populate_record(null::events, $17::jsonb)
       where $17::jsonb is not null and not (select created from cust) and (select old_name from cust) is distinct from $5::text`, TRACED_EVENT_COLUMNS)}
    )${idempotent ? `,
    idem as (
      ${recoveryPointCteSql({ organizationId: '$1::text', key: '$23::text', token: '$24::text', point: "jsonb_build_object('message_id', $6::text)", when: WRITTEN })}
    )` : ''}${companion ? `,
    companion as (
      ${numberedPlaceholders(companion.sql, idempotent ? 25 : 23)}
    )` : ''}
    select v.current,${idempotent ? ` ${claimLostCheckSql('idem', WRITTEN)} as claim_held,` : ''} exists (select 1 from dup) as duplicate, exists (select 1 from cust) as written, claim.id, claim.workflow_id, claim.waiting_key,
           array(select id from ex) as started, array(select id from queued) as queued, array(select jsonb_build_object('id', id, 'workflow_id', data->>'workflow_id') from replaced) as replaced,
           array(select jsonb_build_object('id', id, 'workflow_id', workflow_id, 'trigger_id', trigger_id, 'opened', false) from joined
                 union all select jsonb_build_object('id', id, 'workflow_id', workflow_id, 'trigger_id', trigger_id, 'opened', true) from opened) as bursts,
           -- Write again: a replace that could not start (the statement's snapshot missed a newer holder), or a
           -- debounced target neither joined nor opened while the customer's row moved since the snapshot (a
           -- burst opened meanwhile is invisible to this snapshot: the next one sees it).
           case when exists (select 1 from jsonb_array_elements_text($21::jsonb) r(id) where ${STARTS} and r.id not in (select id from ex))
                  or (${STARTS} and (select raced from cust) and ${burstMissedSql('$22')})
                then concurrency_retry() end as retry
      from (select check_message_target_version($1::text, $18::bigint) as current) v left join claim on true`,
});

/** Whether the statement wrote the message (its customer row was written: not a redelivery, the customer not found existing). */
const WRITTEN = 'exists (select 1 from cust)';
const SKIP_REDELIVERY = 'exists (select 1 from dup)';
/** The statement for a known customer or not, with an `Idempotency-Key` or not (one without pays nothing for it), and a companion write. */
const statement = (known: boolean, idempotent: boolean, companion: CompanionWrite | undefined) =>
  known
    ? write('inbound-message-write-known-customer', countInboundCustomerCtes(CUSTOMER, SKIP_REDELIVERY), idempotent, companion)
    : write('inbound-message-write-new-customer', insertInboundCustomerCte(CUSTOMER, SKIP_REDELIVERY), idempotent, companion);
/** The statements by [known customer][idempotent], without a companion write. */
const WRITES = [false, true].map((known) => [false, true].map((idempotent) => statement(known, idempotent, undefined)));
/** With a companion write: by its name, then as WRITES. */
const COMPANION_WRITES = new Map<string, Array<Array<{ name: string; text: string }>>>();
const writeStatement = (known: boolean, idempotent: boolean, companion: CompanionWrite | undefined) => {
  if (!companion) return WRITES[known ? 1 : 0]![idempotent ? 1 : 0]!;
  let variants = COMPANION_WRITES.get(companion.name);
  if (!variants) COMPANION_WRITES.set(companion.name, (variants = [false, true].map((k) => [false, true].map((i) => statement(k, i, companion)))));
  return variants[known ? 1 : 0]![idempotent ? 1 : 0]!;
};

export interface WrittenMessage {
  messageId: string;
  customerId: string;
  waiting: ClaimedWait | undefined;
  /** The executions to start on Temporal after the statement. */
  started: PendingExecution[];
  /** The starts the workflows' concurrency rule skipped (an execution for the customer was running), queued, or that replaced one. */
  skipped: SkippedStart[];
  queued: PendingExecution[];
  /** The executions a `replace` start cancelled: their Temporal runs are cancelled after the commit. */
  replaced: ReplacedExecution[];
  /** The bursts the message joined or opened (their debouncers start after the commit). */
  bursts: DebouncedBurst[];
  /** The time the message's rows carry. */
  receivedAt: Date;
}

/** A debounced burst a message joined, or opened (`opened`). */
export interface DebouncedBurst {
  id: string;
  workflow_id: string;
  trigger_id: string | null;
  opened: boolean;
}

export type { SkippedStart } from './message.conflicts';

/** The `message.received` outbox row of an inbound message (`customerId` null when the statement resolves it). */
export function messageReceivedEvent(organizationId: string, messageId: string, customerId: string | null, msg: InboundMessage, now: Date) {
  return eventRow({
    organizationId,
    type: 'message.received',
    occurredAt: now,
    data: {
      message_id: messageId,
      customer_id: customerId,
      external_id: msg.customer_id,
      channel: msg.channel,
      text: msg.message,
      metadata: msg.metadata ?? {},
      ...(msg.provider_message_id !== undefined ? { provider_message_id: msg.provider_message_id } : {}),
      execution_id: null,
    },
  });
}

/** Writes the message and everything it starts or answers, in one statement (see above). */
export async function writeMessage(
  pool: HotPool,
  targets: MessageTargets,
  m: { organizationId: string; msg: InboundMessage; language: string | undefined; claim?: HeldClaim | undefined; companion?: CompanionWrite | undefined },
): Promise<WrittenMessage> {
  const { organizationId, msg, language, claim, companion } = m;
  const now = new Date();
  const customerId = targets.customerId ?? newId('customer');
  const messageId = newId('message');
  const plan = planStarts(targets, { organizationId, customerId, messageId, msg, language, now });
  const name = msg.customer?.name ?? null;
  const customerData = { customer_id: customerId, external_id: msg.customer_id, channel: msg.channel, name };
  const received = messageReceivedEvent(organizationId, messageId, customerId, msg, now);
  const json = (v: unknown) => JSON.stringify(v);
  const [row] = await hotQuery<
    { duplicate: boolean; written: boolean; id: string | null; started: string[]; queued: string[]; replaced: ReplacedExecution[]; bursts: DebouncedBurst[] } & ClaimedWait
  >(pool, writeStatement(Boolean(targets.customerId), claim !== undefined, companion), [
    organizationId, // $1
    msg.channel, // $2
    msg.customer_id, // $3
    customerId, // $4
    name, // $5
    messageId, // $6
    msg.message, // $7
    json(msg.metadata ?? {}), // $8
    language ?? null, // $9
    json(plan.starts.map((p) => p.executionId)), // $10
    json(plan.executions), // $11
    json(plan.firings), // $12
    json(plan.events), // $13
    msg.provider_message_id ?? null, // $14
    json(received), // $15
    json(eventRow({ organizationId, type: 'customer.created', data: customerData, occurredAt: now })), // $16
    name === null ? null : json(eventRow({ organizationId, type: 'customer.updated', data: { ...customerData, changed: ['name'] }, occurredAt: now })), // $17
    targets.version, // $18
    json(plan.conflicts.queue), // $19
    json(plan.conflicts.replaceKeys), // $20
    json(plan.conflicts.replace), // $21
    json(plan.bursts), // $22
    ...(claim ? [claim.key, claim.token] : []), // $23, $24
    ...(companion?.bindings ?? []),
  ]);
  if (row!.duplicate) throw new Redelivery();
  if (!row!.written) throw new CustomerExists();
  const claimed = row!.id === null ? undefined : { id: row!.id, workflow_id: row!.workflow_id, waiting_key: row!.waiting_key };
  if (claimed) return { messageId, customerId, waiting: claimed, started: [], skipped: [], queued: [], replaced: [], bursts: [], receivedAt: now };
  return { messageId, customerId, waiting: undefined, ...sortStarts(plan, row!), bursts: row!.bursts, receivedAt: now };
}
