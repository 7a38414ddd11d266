/**
 * Owns what an operator reads in the Temporal UI and CLI besides ids: the one-line summaries
 * of workflows and activities, their markdown details, and the execution's live state
 * (current details, query `state`). Workflow code imports this file, so it imports nothing
 * but @temporalio/workflow (no Node built-ins, no src/, no ORM).
 *
 * No personal data beyond the last 4 characters of a customer's external id (a phone
 * number, an email, a handle) ever reaches a summary: `maskExternalId`.
 */
import { defineQuery } from '@temporalio/workflow';

/** Summaries are single-line; the UI truncates long ones anyway. */
const MAX_SUMMARY = 200;

/** `+15550000001` -> `…0001`; ids of 4 characters or fewer are hidden entirely. */
export function maskExternalId(externalId: string): string {
  return externalId.length > 4 ? `…${externalId.slice(-4)}` : '…';
}

/** Joins the parts of a one-line summary with ` · `, dropping the empty ones and newlines. */
export function summaryLine(...parts: Array<string | null | undefined | false>): string {
  const line = parts
    .filter((p): p is string => typeof p === 'string' && p !== '')
    .join(' · ')
    .replace(/\s+/g, ' ');
  return line.length > MAX_SUMMARY ? `${line.slice(0, MAX_SUMMARY - 1)}…` : line;
}

/** `Greeter · whatsapp · …0001 · rev 3`: an execution's (or a dry-run child's) static summary. */
export function executionSummary(e: { workflowName: string; channel: string; customerExternalId?: string | null; revision: number }): string {
  return summaryLine(e.workflowName, e.channel, e.customerExternalId ? maskExternalId(e.customerExternalId) : undefined, `rev ${e.revision}`);
}

/**
 * A static-details block: one `label `id`` line per id, then a link to the API resource.
 * Temporal markdown; `apiUrl` is absolute (BASE_URL + path).
 */
export function staticDetails(ids: Array<[label: string, id: string | null | undefined]>, apiUrl: string): string {
  const lines = ids.filter(([, id]) => id).map(([label, id]) => `**${label}** \`${id}\``);
  lines.push(`[API resource](${apiUrl})`);
  return lines.join('  \n');
}

/**
 * An activity call with a summary (`node ask · form · email`): the call-site options of the
 * SDK's activity proxies, merged over the proxy's own.
 */
export function withSummary<A extends unknown[], R>(
  fn: { executeWithOptions(options: { summary?: string }, args: A): Promise<R> },
  summary: string,
  ...args: A
): Promise<R> {
  return fn.executeWithOptions({ summary: summaryLine(summary) }, args);
}

/** Where an execution stands, as query `state` returns it (and current details say it). */
export interface ExecutionState {
  /** `starting` until the first node, then `sending` / `waiting` / `running`, and the outcome at the end. */
  phase: 'starting' | 'sending' | 'running' | 'waiting' | 'success' | 'failed' | 'cancelled' | 'waiting_for_input';
  /** The node it is at (null before the first). */
  node_id: string | null;
  node_type: string | null;
  /** While waiting: the form field asked, the prompt attempt, since when and until when (ISO 8601). */
  field?: string;
  attempt?: number;
  waiting_since?: string;
  times_out_at?: string;
  steps_completed: number;
  /** On failure: the error type. */
  error_type?: string;
}
export const executionStateQuery = defineQuery<ExecutionState>('state');

const hhmm = (iso: string) => iso.slice(11, 16);

/** `waiting for email (node ask, since 12:03, times out 12:13)`, `sending node hi`, `done` (times in UTC). */
export function describeState(s: ExecutionState): string {
  switch (s.phase) {
    case 'starting':
      return 'starting';
    case 'sending':
      return `sending node ${s.node_id}`;
    case 'running':
      return `running node ${s.node_id} (${s.node_type})`;
    case 'waiting':
      return `waiting for ${s.field} (node ${s.node_id}${s.attempt && s.attempt > 1 ? `, attempt ${s.attempt}` : ''}, since ${hhmm(s.waiting_since!)} UTC, times out ${hhmm(s.times_out_at!)} UTC)`;
    case 'success':
      return 'done';
    case 'failed':
      return `failed at node ${s.node_id}${s.error_type ? ` (${s.error_type})` : ''}`;
    case 'cancelled':
      return 'cancelled';
    case 'waiting_for_input':
      return `dry run stopped at node ${s.node_id}: no recorded reply left for ${s.field}`;
  }
}
