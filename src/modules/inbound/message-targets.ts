/**
 * What an inbound message may start and who sent it, read before the write
 * (`message.writes.ts`), and kept in memory so that most messages read nothing at all.
 *
 * - The organization's candidates for a channel (its active `message` triggers and the
 *   active workflows they start or that listen on the channel) are kept with the
 *   organization's message-target version they were read at. The write statement checks
 *   that version (`check_message_target_version`, Migration20261130000200) and fails with
 *   `WAT01` when a trigger or workflow changed since, in this process or any other; the
 *   caller then reads again (`fresh`) and writes again. So a cached plan is never acted on
 *   once its rows changed, and no process has to tell the others.
 * - A customer's id per (organization, channel, external id) never changes (customers are
 *   never deleted), so it is kept once known. An unknown one is taken for a new customer
 *   and not read: the write creates it, or finds that it exists (created by another
 *   process, or before this one started), writes nothing and asks for a read
 *   (`CustomerExists`), once per customer and process.
 *
 * Both caches are bounded (LRU): the candidates by the size of their JSON, the customers
 * by count.
 */
import { LRUCache } from 'lru-cache';
import type { HotPool } from '../../db/hot-query';
import { hotQuery } from '../../db/hot-query';
import type { RunnableWorkflow } from '../executions/execution.starter';
import { messageMatches, messageTriggerMatches } from '../triggers/trigger-firing';
import type { MessageTriggerConfig } from '../triggers/trigger.schemas';
import { debounceOf } from '../workflows/workflow.schemas';
import type { InboundMessage } from './inbound-message';

type WorkflowRow = RunnableWorkflow & { channel: string };
type TriggerRow = { id: string; workflow_id: string; channel: string; configuration: MessageTriggerConfig };

/** An organization's candidates for one channel, as of `version`. */
interface Candidates {
  /** The organization's message-target version (a bigint, as text). */
  version: string;
  /** Active `message` triggers of the organization, oldest first. */
  triggers: TriggerRow[];
  /** Active workflows of the channel or started by one of `triggers`, by id. */
  workflows: Map<string, WorkflowRow>;
  /** Whether a customer of the channel was handed off (customer_handoffs) when read. */
  handoffs: boolean;
}

/** What a message may start and who sent it. */
export interface MessageTargets {
  /** The version the write statement checks. */
  version: string;
  /** Matching active `message` triggers of active workflows, oldest first. */
  triggers: Array<{ triggerId: string; workflowId: string }>;
  /** Active workflows of the channel matched by their own keywords, oldest first. */
  configured: string[];
  workflows: Map<string, WorkflowRow>;
  /** The customer's id when known (null: taken for a new customer). */
  customerId: string | null;
  /**
   * Whether a customer of the channel may be handed off: false only when none was as of
   * `version` (a handoff since bumps it, and the write refuses the plan).
   */
  handoffs: boolean;
  /**
   * The debounced targets of the message's channel, matching or not (a burst open for one
   * is joined by any message): message triggers first, oldest first, then workflows' own
   * keyword triggers. `matches`: the message matches it (it may open a burst).
   */
  debounced: DebouncedTarget[];
}

/** A message trigger, or a workflow's own keyword trigger (`triggerId` null), with a debounce. */
export interface DebouncedTarget {
  triggerId: string | null;
  workflowId: string;
  debounceMs: number;
  maxWaitMs: number;
  matches: boolean;
}

const READ = {
  name: 'inbound-message-read',
  // The organization's active message triggers, read once for both sub-selects.
  text: `with t as (
      select id, workflow_id, channel, configuration, created_at from triggers
       where organization_id = $1 and type = 'message' and status = 'active' and deleted_at is null
    )
    select
    (select coalesce(jsonb_agg(jsonb_build_object('id', id, 'workflow_id', workflow_id, 'channel', channel, 'configuration', configuration) order by created_at, id), '[]')
       from t)::text as triggers,
    (select coalesce(jsonb_agg(jsonb_build_object('id', id, 'name', name, 'status', status, 'revision', revision, 'configuration', configuration, 'channel', channel)
                               order by created_at, id), '[]')
       from workflows where organization_id = $1 and status = 'active' and deleted_at is null
        and (channel = $2 or id in (select workflow_id from t)))::text as workflows,
    (select id from customers where organization_id = $1 and channel = $2 and external_id = $3) as customer_id,
    exists (select 1 from customer_handoffs where organization_id = $1 and channel = $2 and ended_at is null) as handoffs,
    coalesce((select version from message_target_versions where organization_id = $1), 0)::text as version`,
};

// NUL cannot occur in an organization id or a channel, so the keys cannot run into each other.
const candidatesKey = (organizationId: string, msg: InboundMessage) => `${organizationId}\u0000${msg.channel}`;
const customersKey = (organizationId: string, msg: InboundMessage) => `${organizationId}\u0000${msg.channel}\u0000${msg.customer_id}`;

/** Bounds of the caches: ~64 MB of candidates' JSON; 100k customer ids (~20 MB). */
const CANDIDATES_MAX_BYTES = 64 * 1024 * 1024;
const CUSTOMERS_MAX = 100_000;

export class MessageTargetsCache {
  private readonly candidates = new LRUCache<string, Candidates>({ maxSize: CANDIDATES_MAX_BYTES });
  private readonly customers = new LRUCache<string, string>({ max: CUSTOMERS_MAX });
  /** Reads of this process (the tests count them). */
  reads = 0;

  constructor(private readonly pool: HotPool) {}

  /**
   * The targets of `msg`: its candidates from memory, or read with its customer in one
   * statement; a customer not in memory is taken for a new one. `fresh` reads both even
   * when they are in memory: the write found them changed.
   */
  async targets(organizationId: string, msg: InboundMessage, language: string | undefined, fresh = false): Promise<MessageTargets> {
    const channelKey = candidatesKey(organizationId, msg);
    const customerKey = customersKey(organizationId, msg);
    let candidates = fresh ? undefined : this.candidates.get(channelKey);
    let customerId = fresh ? undefined : this.customers.get(customerKey);
    if (!candidates) {
      this.reads++;
      const [row] = await hotQuery<{ triggers: string; workflows: string; customer_id: string | null; handoffs: boolean; version: string }>(this.pool, READ, [
        organizationId,
        msg.channel,
        msg.customer_id,
      ]);
      const workflows = (JSON.parse(row!.workflows) as WorkflowRow[]).filter((w) => w.configuration);
      candidates = { version: row!.version, triggers: JSON.parse(row!.triggers), workflows: new Map(workflows.map((w) => [w.id, w])), handoffs: row!.handoffs };
      this.keepCandidates(channelKey, candidates, row!.triggers.length + row!.workflows.length);
      customerId = row!.customer_id ?? undefined;
    }
    if (customerId !== undefined) this.customers.set(customerKey, customerId);
    return match(candidates, customerId ?? null, msg, language);
  }

  /** The customer of a message just written (created by it, or known before). */
  rememberCustomer(organizationId: string, msg: InboundMessage, customerId: string): void {
    this.customers.set(customersKey(organizationId, msg), customerId);
  }

  /** Keeps the newer of two reads: a slow read of an older version must not replace a newer one. */
  private keepCandidates(key: string, candidates: Candidates, jsonBytes: number): void {
    const kept = this.candidates.peek(key);
    if (kept && BigInt(kept.version) > BigInt(candidates.version)) return;
    this.candidates.set(key, candidates, { size: Math.max(1, jsonBytes) });
  }
}

/** The message's matches among the candidates. */
function match(candidates: Candidates, customerId: string | null, msg: InboundMessage, language: string | undefined): MessageTargets {
  const { workflows } = candidates;
  const query = { channel: msg.channel, text: msg.message, ...(language ? { language } : {}) };
  const triggers = candidates.triggers
    .filter((t) => workflows.has(t.workflow_id) && messageTriggerMatches(t, query))
    .map((t) => ({ triggerId: t.id, workflowId: t.workflow_id }));
  const keywordMatches = (keywords: string[]) => messageMatches({ keywords, case_sensitive: false, exact_match: false } as never, msg.message);
  const configured = [...workflows.values()]
    .filter((w) => {
      const trigger = w.channel === msg.channel ? w.configuration!.trigger : undefined;
      return trigger?.type === 'keyword' && keywordMatches(trigger.keywords);
    })
    .map((w) => w.id);
  const debounced: DebouncedTarget[] = [];
  for (const t of candidates.triggers) {
    const debounce = debounceOf(t.configuration);
    if (!debounce || !workflows.has(t.workflow_id) || (t.configuration.channel ?? t.channel) !== msg.channel) continue;
    debounced.push({ triggerId: t.id, workflowId: t.workflow_id, ...debounce, matches: triggers.some((m) => m.triggerId === t.id) });
  }
  for (const w of workflows.values()) {
    const trigger = w.channel === msg.channel ? w.configuration!.trigger : undefined;
    const debounce = trigger?.type === 'keyword' ? debounceOf(trigger) : null;
    if (debounce) debounced.push({ triggerId: null, workflowId: w.id, ...debounce, matches: configured.includes(w.id) });
  }
  return { version: candidates.version, triggers, configured, workflows, customerId, debounced, handoffs: candidates.handoffs };
}
