/**
 * Owns the names the execution workflow shares with the API and the activities: the
 * workflow-id builder, the reply signal, and the workflow's input and node types. Workflow
 * code imports this file, so it imports nothing but @temporalio/workflow (no Node
 * built-ins, no src/, no ORM).
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** The Temporal workflow id of an execution is the execution id itself (`exec_...`). */
export const executionWorkflowId = (executionId: string): string => executionId;

/** Workflow type name, for clients that start it by name. */
export const EXECUTION_WORKFLOW_TYPE = 'executionWorkflow';

/**
 * The key of one form prompt: its outbound dedupe key and the id of the wait it opens (the
 * one reply that claims the wait records this key). Attempt n re-asks the same field.
 */
export const formWaitKey = (executionId: string, nodeId: string, field: string, attempt: number): string =>
  `${executionId}:${nodeId}:${field}:${attempt}`;

/** Form `timeout_seconds` when the node does not set one: 24 hours. */
export const DEFAULT_FORM_TIMEOUT_SECONDS = 24 * 3600;
/** Invalid replies a form field accepts (re-asking each time) before failing with validation_error. */
export const FORM_MAX_ATTEMPTS = 3;

/** A WhatsApp message template: what a message node sends outside the 24-hour customer service window. */
export interface MessageTemplateSpec {
  name: string;
  language: string;
  components?: Array<Record<string, unknown>>;
}

/**
 * The answers of a scored form field offered as choices (a WhatsApp interactive list): one
 * row per score, its title the score itself, so the reply (a `list_reply` whose title is the
 * text) validates as a typed answer would. Only where a list can hold every answer: Meta
 * allows 10 rows per list, so a `rating` (1 to 5) is a list and an `nps` (0 to 10, 11
 * answers) stays a text question.
 */
export interface PromptChoices {
  /** The list's button (Meta: at most 20 characters). */
  button: string;
  rows: Array<{ id: string; title: string }>;
}

const LIST_MAX_ROWS = 10;

export function scoreChoices(field: { type: string; name: string }): PromptChoices | undefined {
  if (field.type !== 'rating' && field.type !== 'nps') return undefined;
  const [min, max] = SCORE_RANGES[field.type];
  if (max - min + 1 > LIST_MAX_ROWS) return undefined;
  const rows: PromptChoices['rows'] = [];
  for (let n = min; n <= max; n++) rows.push({ id: `${field.name}:${n}`, title: String(n) });
  return { button: 'Choose a score', rows };
}

/** TwiML `<Say>` attributes of a node on a voice call. */
export interface NodeVoiceSpec {
  language?: string;
  voice?: string;
}

export interface MessageNodeSpec {
  id: string;
  voice?: NodeVoiceSpec;
  type: 'message';
  content: string;
  template?: MessageTemplateSpec;
  next?: string;
}
/**
 * `fallback: "handoff"` on an ai_response node: below its confidence threshold the customer is
 * handed to a person (reason `low_confidence`) instead of sent a fallback text, and the
 * execution ends with the outcome `handed_off` (docs/handoff.md).
 */
export const HANDOFF_FALLBACK = 'handoff';

export interface AiResponseNodeSpec {
  id: string;
  voice?: NodeVoiceSpec;
  type: 'ai_response';
  knowledge_base: string;
  confidence_threshold?: number;
  fallback?: string;
  next?: string;
}
export interface FormFieldSpec {
  name: string;
  type: 'text' | 'email' | 'number' | 'phone' | 'rating' | 'nps';
  required: boolean;
  label: string;
}
export interface FormNodeSpec {
  id: string;
  voice?: NodeVoiceSpec;
  type: 'form';
  fields: FormFieldSpec[];
  timeout_seconds?: number;
  /** Sent instead of a prompt outside the window; with it a wait outlasts the window (the template re-opens the conversation). */
  template?: MessageTemplateSpec;
  next?: string;
}

/**
 * What sending a form prompt tells the wait after it: when the customer service window
 * closes (epoch ms), for a prompt sent inside a Meta connection's window. A wait without a
 * template ends there with `customer_service_window_closed`; a run recorded before this
 * existed got nothing back and waits its full timeout.
 */
export interface FormPromptResult {
  windowClosesAt?: number;
}
export type ExecutionNodeSpec = MessageNodeSpec | AiResponseNodeSpec | FormNodeSpec;

export interface ExecutionWorkflowInput {
  executionId: string;
  organizationId: string;
  workflowId: string;
  workflowName: string;
  revision: number;
  channel: string;
  customerId: string | null;
  /** The execution's input: `message` (the inbound text) and whatever the starter passed. */
  input: Record<string, unknown>;
  /** The nodes of the revision the execution started on; nodes[0] runs first. */
  nodes: ExecutionNodeSpec[];
  /** ACTIVITY_INFRA_RETRY_HOURS at start, in ms: bounds a node that keeps timing out. Absent in older runs. */
  infraRetryMs?: number;
  /**
   * How the run walks its nodes, fixed at its start (EXECUTION_WORKFLOW_VERSION then); runs
   * started before it carry none and keep the walk their patch markers recorded. In the
   * input rather than a patch marker: a marker (and the search attribute the SDK upserts with
   * it) would cost every new run two history events and a visibility write, for the sake of
   * the runs in flight at one deployment.
   */
  version?: number;
}

/**
 * 2 (2026-11-25): consecutive message nodes, and the completion when they end the run, are
 * one local activity (`runMessageRun`).
 */
export const EXECUTION_WORKFLOW_VERSION = 2;

/** `waiting_for_input` only ends a dry run: its recorded replies ran out at a form. */
export type ExecutionOutcome = 'success' | 'failed' | 'cancelled' | 'waiting_for_input';

export interface ExecutionWorkflowResult {
  status: ExecutionOutcome;
  output: Record<string, unknown>;
  errorType?: 'timeout' | 'api_error' | 'validation_error';
  errorMessage?: string;
}

/** A customer's message delivered to an execution waiting for input. */
export interface CustomerReply {
  messageId: string;
  text: string;
}

/**
 * How a run acts. `live`: the execution of a conversation. `dry_run`: a replay of a
 * recorded execution against another configuration, fed with that execution's recorded
 * replies in order instead of waiting for signals; its activities are the same code built
 * with a sink that sends and counts nothing, registered under DRY_RUN_ACTIVITY_PREFIX.
 */
export type RunMode = { kind: 'live' } | { kind: 'dry_run'; dryRunId: string; replies: CustomerReply[] };

/** Activity names of the execution activities built with a dry run's sink: `dryRun_runMessageNode`, ... */
export const DRY_RUN_ACTIVITY_PREFIX = 'dryRun_';
export const customerReplySignal = defineSignal<[CustomerReply]>('customerReply');

/** Where the execution is: the node it runs and whether it waits for a reply. */
export interface ExecutionProgress {
  nodeId: string | null;
  waitingForInput: boolean;
  stepsCompleted: number;
}
export const executionProgressQuery = defineQuery<ExecutionProgress>('executionProgress');

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const PHONE = /^\+?[0-9 ()-]{6,20}$/;
const NUMBER = /^-?\d+(\.\d+)?$/;
/** Inclusive integer ranges of the scored field types. */
export const SCORE_RANGES = { rating: [1, 5], nps: [0, 10] } as const;

/** The scored answers of a form (`rating` / `nps` fields), which the analytics rollups read from the step output. */
export function formScores(fields: FormFieldSpec[], answers: Record<string, string>): { rating?: number[]; nps?: number[] } | undefined {
  const scores: { rating?: number[]; nps?: number[] } = {};
  for (const f of fields) {
    const answer = answers[f.name];
    if ((f.type === 'rating' || f.type === 'nps') && answer) (scores[f.type] ??= []).push(Number(answer));
  }
  return scores.rating || scores.nps ? scores : undefined;
}

/**
 * The transcript text of a customer message that carries no text (an image, a voice note, a
 * location...): `[image]`. A form waiting for text re-asks when it gets one.
 */
export const nonTextMessageText = (type: string): string => `[${type}]`;
const NON_TEXT_MESSAGE = /^\[(image|audio|video|document|sticker|location|contacts|reaction|order|unsupported|attachment|share|story_mention)\]$/;
/**
 * True for a placeholder of a message without text: no keyword matches it (the customer wrote
 * nothing), and a waiting form re-asks.
 */
export const isNonTextMessageText = (text: string): boolean => NON_TEXT_MESSAGE.test(text.trim());

/**
 * Checks one reply against a form field: returns the stored value, or the problem to tell
 * the customer. Pure, so the workflow runs it deterministically.
 */
export function validateFormReply(field: FormFieldSpec, text: string): { value: string } | { problem: string } {
  const value = text.trim();
  if (NON_TEXT_MESSAGE.test(value)) return { problem: 'Please answer with a text message' };
  if (value === '') return field.required ? { problem: `${field.label} is required` } : { value: '' };
  if (field.type === 'email' && !EMAIL.test(value)) return { problem: 'That does not look like an email address' };
  if (field.type === 'phone' && !PHONE.test(value)) return { problem: 'That does not look like a phone number' };
  if (field.type === 'number' && !NUMBER.test(value)) return { problem: 'Please answer with a number' };
  if (field.type === 'rating' || field.type === 'nps') {
    const [min, max] = SCORE_RANGES[field.type];
    if (!/^\d{1,2}$/.test(value) || Number(value) < min || Number(value) > max) return { problem: `Please answer with a whole number from ${min} to ${max}` };
  }
  return { value: value.slice(0, 4096) };
}
