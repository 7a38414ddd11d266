/**
 * Owns the workflow's In / Update / Out shapes and the configuration rules: the node types,
 * what each needs, and the graph checks (unique ids, `next` names a node, no cycles).
 * Shape problems are 400 INVALID_WORKFLOW_CONFIG; a node missing what its type needs is
 * 422 INVALID_NODE_CONFIG, both with the dotted field path.
 */
import { paginationQuery } from '../../http/pagination';
import type { IssueClassifier } from '../../http/validation';
import { Timestamp } from '../../http/openapi';
import { z } from '../../http/zod';
import type { ExecutionNodeSpec } from '../../../temporal/executions.shared';
import { formTimeoutMinSeconds } from '../../config';

export const WORKFLOW_STATUSES = ['draft', 'active', 'inactive'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

export const CHANNELS = ['whatsapp', 'instagram', 'voice', 'messenger', 'sms'] as const;
export type Channel = (typeof CHANNELS)[number];
export const Channel = z.enum(CHANNELS).openapi('Channel');

export const NAME_MAX = 200;
export const DESCRIPTION_MAX = 2000;
export const MAX_NODES = 100;

const nodeId = z.string().min(1).max(64).regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, "_", "-" and "." only');
/** How a voice call says the node's text (TwiML `<Say language voice>`); ignored on other channels. */
export const NodeVoice = z
  .strictObject({
    language: z.string().min(2).max(15).optional().openapi({ example: 'en-US' }),
    voice: z.string().min(1).max(64).optional().openapi({ example: 'Polly.Joanna' }),
  })
  .openapi('NodeVoice');
const nodeBase = { id: nodeId, next: nodeId.optional(), voice: NodeVoice.optional() };

export const MessageTemplate = z
  .strictObject({
    name: z.string().min(1).max(512),
    language: z.string().min(2).max(15).openapi({ example: 'en_US' }),
    components: z.array(z.record(z.string(), z.unknown())).max(20).optional().openapi({ description: "WhatsApp's template components (header, body and button parameters), passed as given" }),
  })
  .openapi('MessageTemplate', {
    description: 'A WhatsApp template approved in Meta’s console: sent instead of `content` outside the 24-hour customer service window',
  });

export const MessageNode = z
  .strictObject({ ...nodeBase, type: z.literal('message'), content: z.string().min(1).max(4096), template: MessageTemplate.optional() })
  .openapi('MessageNode');

export const AiResponseNode = z
  .strictObject({
    ...nodeBase,
    type: z.literal('ai_response'),
    knowledge_base: z.string().min(1).max(64),
    /** Below this confidence the node answers with `fallback` instead. */
    confidence_threshold: z.number().min(0).max(1).optional(),
    fallback: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .openapi({
        description:
          'The text sent below the threshold; `"handoff"` hands the customer to a person instead (reason `low_confidence`) and ends the execution with the outcome `handed_off` (docs/handoff.md)',
      }),
  })
  .openapi('AiResponseNode');

export const FormField = z.strictObject({
  name: z.string().min(1).max(64).regex(/^[A-Za-z0-9_]+$/, 'letters, digits and "_" only'),
  type: z
    .enum(['text', 'email', 'number', 'phone', 'rating', 'nps'])
    .openapi({ description: '`rating`: an integer 1–5 (customer satisfaction); `nps`: an integer 0–10 (net promoter score)' }),
  required: z.boolean().default(false),
  label: z.string().min(1).max(500),
});

export const FormNode = z
  .strictObject({
    ...nodeBase,
    type: z.literal('form'),
    fields: z.array(FormField).min(1).max(50),
    /** How long the form waits for each reply before the execution fails with `timeout`. */
    /** At least 10 s; tests that wait for a real timeout lower that with FORM_TIMEOUT_MIN_SECONDS (see config.ts). */
    timeout_seconds: z.number().int().min(formTimeoutMinSeconds()).max(7 * 24 * 3600).optional(),
    template: MessageTemplate.optional().openapi({
      description:
        'A WhatsApp template sent instead of a prompt outside the 24-hour window. Without one, a wait that outlasts the window ends when it closes, failing the step with `customer_service_window_closed`',
    }),
  })
  .openapi('FormNode');

export const WorkflowNode = z.discriminatedUnion('type', [MessageNode, AiResponseNode, FormNode]).openapi('WorkflowNode');
export type WorkflowNode = z.output<typeof WorkflowNode>;

/**
 * Workflow code declares the node shapes it runs without zod (it may import nothing from
 * src/). The two must describe the same object: this stops compiling the day they drift.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const WORKFLOW_NODE_MATCHES_EXECUTION_NODE_SPEC: Same<WorkflowNode, ExecutionNodeSpec> = true;

/** The longest `debounce_ms` of a message trigger, and the longest `max_wait_ms` (a burst never waits longer). */
export const DEBOUNCE_MAX_MS = 30_000;
export const MAX_WAIT_CAP_MS = 120_000;

/**
 * The debounce of a message trigger or a workflow's keyword trigger (docs/executions.md,
 * "Debounced bursts"): spread into the trigger's object, checked by `checkDebounce`.
 */
export const debounceFields = {
  debounce_ms: z
    .number()
    .int()
    .min(0)
    .max(DEBOUNCE_MAX_MS)
    .optional()
    .openapi({
      description:
        'Default 0 (off). Messages of one customer on one channel that arrive within this many ms of the previous one become ONE execution, started this long after the last of them; its input `message` is their texts joined by newlines in arrival order, `message_ids` their ids. Only the first message must match',
    }),
  max_wait_ms: z
    .number()
    .int()
    .min(1)
    .max(MAX_WAIT_CAP_MS)
    .optional()
    .openapi({ description: 'With `debounce_ms`: the execution starts at the latest this long after the burst\'s first message. Default 3 × `debounce_ms`; at least `debounce_ms`' }),
};

/** `max_wait_ms` below `debounce_ms` would close every burst before its debounce could. */
export function checkDebounce(v: { debounce_ms?: number | undefined; max_wait_ms?: number | undefined }, ctx: z.core.$RefinementCtx): void {
  if (v.max_wait_ms !== undefined && v.max_wait_ms < (v.debounce_ms ?? 0)) {
    ctx.addIssue({ code: 'custom', path: ['max_wait_ms'], message: `max_wait_ms must be at least debounce_ms (${v.debounce_ms})` });
  }
}

/** A trigger's debounce in effect, or null (off). */
export function debounceOf(v: { debounce_ms?: number | undefined; max_wait_ms?: number | undefined }): { debounceMs: number; maxWaitMs: number } | null {
  const debounceMs = v.debounce_ms ?? 0;
  if (debounceMs <= 0) return null;
  return { debounceMs, maxWaitMs: v.max_wait_ms ?? Math.min(3 * debounceMs, MAX_WAIT_CAP_MS) };
}

export const WorkflowTrigger = z
  .discriminatedUnion('type', [
    z
      .strictObject({ type: z.literal('keyword'), keywords: z.array(z.string().min(1).max(100)).min(1).max(50), ...debounceFields })
      .superRefine(checkDebounce),
    // A phone call on a twilio_voice connection (docs/channels.md, Voice); optionally only that connection's calls.
    z.strictObject({
      type: z.literal('call'),
      channel_connection_id: z.string().max(100).optional().openapi({ description: 'Only calls to this twilio_voice connection; any of the organization’s otherwise' }),
    }),
  ])
  .openapi('WorkflowTrigger', { description: '`keyword`: inbound messages containing a keyword; `call`: phone calls (voice workflows)' });

/**
 * How many executions of the workflow may run at once per customer, and what a message that
 * would start one more does (docs/executions.md, "One conversation per customer"). Absent:
 * `DEFAULT_CONCURRENCY`. `limit` is 1 for now (a unique index decides it).
 */
export const WorkflowConcurrency = z
  .strictObject({
    per: z.literal('customer').default('customer'),
    limit: z.literal(1).default(1),
    on_conflict: z
      .enum(['skip', 'queue', 'replace'])
      .default('skip')
      .openapi({
        description:
          '`skip`: a message that would start a second execution for the customer starts none for this workflow (its outcome: `action: "skipped", reason: "already_running"`); ' +
          '`queue`: the execution is recorded `queued` and starts when the running one ends, in arrival order (at most 10 wait; beyond, `action: "skipped", reason: "queue_full"`); ' +
          '`replace`: the running execution is cancelled and the new one starts (outcome `action: "started"` with `replaced_execution_id`)',
      }),
  })
  .openapi('WorkflowConcurrency', { description: 'Default `{per: "customer", limit: 1, on_conflict: "skip"}`. Replies to a waiting form are never subject to it' });
export type WorkflowConcurrency = z.output<typeof WorkflowConcurrency>;
export const DEFAULT_CONCURRENCY: WorkflowConcurrency = { per: 'customer', limit: 1, on_conflict: 'skip' };

export const WorkflowConfiguration = z
  .strictObject({
    trigger: WorkflowTrigger.optional(),
    concurrency: WorkflowConcurrency.optional(),
    nodes: z.array(WorkflowNode).min(1).max(MAX_NODES),
  })
  .superRefine((config, ctx) => {
    const index = new Map<string, number>();
    config.nodes.forEach((node, i) => {
      if (index.has(node.id)) ctx.addIssue({ code: 'custom', path: ['nodes', i, 'id'], message: `duplicate node id "${node.id}"` });
      else index.set(node.id, i);
    });
    config.nodes.forEach((node, i) => {
      if (node.next !== undefined && !index.has(node.next)) {
        ctx.addIssue({ code: 'custom', path: ['nodes', i, 'next'], message: `next names unknown node "${node.next}"` });
      }
    });
    // Without branching nodes a cycle would never end: follow `next` from every node.
    for (const [start, i] of index) {
      const seen = new Set<string>([start]);
      for (let cur = config.nodes[i]?.next; cur !== undefined; cur = config.nodes[index.get(cur) ?? -1]?.next) {
        if (seen.has(cur)) {
          ctx.addIssue({ code: 'custom', path: ['nodes', i, 'next'], message: `nodes form a cycle through "${cur}"` });
          return;
        }
        seen.add(cur);
      }
    }
  })
  .openapi('WorkflowConfiguration');
export type WorkflowConfiguration = z.output<typeof WorkflowConfiguration>;

const NODE_STRUCTURE_FIELDS = new Set(['id', 'type', 'next']);

/** configuration.nodes[i].<field needed by the node's type> → 422; other configuration problems → 400. */
export const classifyWorkflowIssue: IssueClassifier = ({ path, missing, issue }) => {
  if (path[0] !== 'configuration') return undefined;
  const [, nodes, , field] = path;
  const isNodeField = nodes === 'nodes' && path.length >= 4 && typeof field === 'string' && !NODE_STRUCTURE_FIELDS.has(field);
  if (isNodeField && issue.code !== 'custom') return { status: 422, code: 'INVALID_NODE_CONFIG' };
  if (path.length === 1 && missing) return { status: 400, code: 'MISSING_REQUIRED_FIELD' };
  return { status: 400, code: 'INVALID_WORKFLOW_CONFIG' };
};

const name = z.string().trim().min(1, 'name must not be empty').max(NAME_MAX);
const description = z.string().max(DESCRIPTION_MAX);

const ChannelConnectionRef = z
  .string()
  .max(100)
  .nullable()
  .openapi({ description: "The channel connection (`chn_…`, same channel) executions send through when they were not started by a message of one; null: the organization's only active connection of the channel" });

export const WorkflowIn = z
  .strictObject({
    name,
    description: description.optional(),
    channel: Channel,
    channel_connection_id: ChannelConnectionRef.optional(),
    configuration: WorkflowConfiguration.optional(),
  })
  .openapi('WorkflowCreate');

export const WorkflowUpdate = z
  .strictObject({
    name: name.optional(),
    description: description.optional(),
    channel_connection_id: ChannelConnectionRef.optional(),
    configuration: WorkflowConfiguration.optional(),
  })
  .openapi('WorkflowUpdate');

export const WorkflowOut = z
  .object({
    id: z.string().openapi({ example: 'wf_4eC39HqLyjWDarjtT1zd' }),
    name: z.string(),
    description: z.string(),
    status: z.enum(WORKFLOW_STATUSES),
    channel: Channel,
    channel_connection_id: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
    execution_count: z.number().int(),
    success_rate: z.number().nullable(),
  })
  .openapi('Workflow');

export const WorkflowDetailOut = WorkflowOut.extend({
  configuration: WorkflowConfiguration.nullable(),
  revision: z.number().int(),
}).openapi('WorkflowDetail');

export const WorkflowListQuery = z.strictObject({
  ...paginationQuery,
  status: z.enum(WORKFLOW_STATUSES).optional(),
  channel: Channel.optional(),
  search: z.string().min(1).max(200).optional().openapi({ description: 'Matches name or description, case-insensitive' }),
});

export const WorkflowIdParams = z.object({ workflow_id: z.string().max(64) });

export const WorkflowActivationOut = z
  .object({ id: z.string(), status: z.enum(WORKFLOW_STATUSES), activated_at: Timestamp.optional(), deactivated_at: Timestamp.optional() })
  .openapi('WorkflowActivation');
