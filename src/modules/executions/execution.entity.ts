/**
 * An execution is one run of a workflow revision for one customer, mirrored by one
 * Temporal workflow whose id is the execution id. PostgreSQL is the record the API reads;
 * `temporalStartedAt` stays null until the Temporal start is confirmed, which is what the
 * reconciler looks for after a crash between the commit and the start.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';

/** `queued`: waiting for the customer's running execution of the workflow (`configuration.concurrency.on_conflict: "queue"`). */
export const EXECUTION_STATUSES = ['queued', 'running', 'success', 'failed', 'cancelled'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
export const ERROR_TYPES = ['timeout', 'api_error', 'validation_error'] as const;
export type ErrorType = (typeof ERROR_TYPES)[number];

export class Execution {
  [OptionalProps]?:
    | 'triggerId'
    | 'customerId'
    | 'status'
    | 'output'
    | 'errorType'
    | 'errorMessage'
    | 'startedAt'
    | 'completedAt'
    | 'durationMs'
    | 'retryOf'
    | 'messageId'
    | 'waitingNodeId'
    | 'waitingKey'
    | 'temporalStartedAt'
    | 'temporalCancelledAt'
    | 'resetFromRunId'
    | 'queuedAt';
  id!: string;
  organizationId!: string;
  workflowId!: string;
  revision!: number;
  triggerId: string | null = null;
  customerId: string | null = null;
  channel!: string;
  status: ExecutionStatus = 'running';
  input!: Record<string, unknown>;
  output: Record<string, unknown> | null = null;
  errorType: ErrorType | null = null;
  errorMessage: string | null = null;
  startedAt: Date = new Date();
  completedAt: Date | null = null;
  durationMs: number | null = null;
  retryOf: string | null = null;
  /** Set when an operator reset the execution's Temporal run: the run it was reset from (docs/operators.md). */
  resetFromRunId: string | null = null;
  /** The inbound message that started it, when one did. */
  messageId: string | null = null;
  /** The form node whose open wait accepts the customer's next message; null when none is open. */
  waitingNodeId: string | null = null;
  /** The open wait (the prompt's dedupe key); the one reply that claims it records it as `reply_to_wait`. */
  waitingKey: string | null = null;
  temporalStartedAt: Date | null = null;
  /** Set when the execution was queued behind the customer's running one (`on_conflict: "queue"`); `startedAt` is then when it left the queue. */
  queuedAt: Date | null = null;
  /** Set once Temporal took the cancel of this cancelled execution's run; null rows are re-sent by the reconciler. */
  temporalCancelledAt: Date | null = null;
}

export const ExecutionSchema = new EntitySchema<Execution>({
  class: Execution,
  tableName: 'executions',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    workflowId: { type: 'string', fieldName: 'workflow_id' },
    revision: { type: 'integer' },
    triggerId: { type: 'string', fieldName: 'trigger_id', nullable: true },
    customerId: { type: 'string', fieldName: 'customer_id', nullable: true },
    channel: { type: 'string' },
    status: { type: 'string' },
    input: { type: 'json' },
    output: { type: 'json', nullable: true },
    errorType: { type: 'string', fieldName: 'error_type', nullable: true },
    errorMessage: { type: 'text', fieldName: 'error_message', nullable: true },
    startedAt: { type: 'Date', fieldName: 'started_at' },
    completedAt: { type: 'Date', fieldName: 'completed_at', nullable: true },
    durationMs: { type: 'integer', fieldName: 'duration_ms', nullable: true },
    retryOf: { type: 'string', fieldName: 'retry_of', nullable: true },
    resetFromRunId: { type: 'string', fieldName: 'reset_from_run_id', nullable: true },
    messageId: { type: 'string', fieldName: 'message_id', nullable: true },
    waitingNodeId: { type: 'string', fieldName: 'waiting_node_id', nullable: true },
    waitingKey: { type: 'string', fieldName: 'waiting_key', nullable: true },
    temporalStartedAt: { type: 'Date', fieldName: 'temporal_started_at', nullable: true },
    temporalCancelledAt: { type: 'Date', fieldName: 'temporal_cancelled_at', nullable: true },
    queuedAt: { type: 'Date', fieldName: 'queued_at', nullable: true },
  },
});

export class ExecutionStep {
  [OptionalProps]?: 'completedAt' | 'durationMs' | 'errorType' | 'errorMessage';
  id!: string;
  executionId!: string;
  organizationId!: string;
  nodeId!: string;
  type!: string;
  status!: 'completed' | 'failed';
  startedAt!: Date;
  completedAt: Date | null = null;
  durationMs: number | null = null;
  input!: Record<string, unknown>;
  output!: Record<string, unknown>;
  errorType: string | null = null;
  errorMessage: string | null = null;
}

export const ExecutionStepSchema = new EntitySchema<ExecutionStep>({
  class: ExecutionStep,
  tableName: 'execution_steps',
  properties: {
    id: { type: 'string', primary: true },
    executionId: { type: 'string', fieldName: 'execution_id' },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    nodeId: { type: 'string', fieldName: 'node_id' },
    type: { type: 'string' },
    status: { type: 'string' },
    startedAt: { type: 'Date', fieldName: 'started_at' },
    completedAt: { type: 'Date', fieldName: 'completed_at', nullable: true },
    durationMs: { type: 'integer', fieldName: 'duration_ms', nullable: true },
    input: { type: 'json' },
    output: { type: 'json' },
    errorType: { type: 'string', fieldName: 'error_type', nullable: true },
    errorMessage: { type: 'text', fieldName: 'error_message', nullable: true },
  },
});
