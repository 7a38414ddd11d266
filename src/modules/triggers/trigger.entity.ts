/**
 * Triggers and their firings. A trigger belongs to one organization and starts one
 * workflow; its `configuration` depends on its type (see trigger.schemas.ts). A trigger
 * execution records one firing; its outcome (status, completion, duration) is read from the
 * linked workflow execution at query time, never copied, so it cannot drift.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';

export const TRIGGER_TYPES = ['message', 'schedule', 'webhook', 'api'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];
export const TRIGGER_STATUSES = ['active', 'inactive', 'paused'] as const;
export type TriggerStatus = (typeof TRIGGER_STATUSES)[number];

export class Trigger {
  [OptionalProps]?:
    | 'status'
    | 'executionCount'
    | 'lastTriggered'
    | 'createdAt'
    | 'updatedAt'
    | 'activatedAt'
    | 'deactivatedAt'
    | 'pausedAt'
    | 'resumedAt'
    | 'deletedAt';
  id!: string;
  organizationId!: string;
  workflowId!: string;
  name!: string;
  type!: TriggerType;
  status: TriggerStatus = 'active';
  channel!: string;
  configuration!: Record<string, unknown>;
  /** Bumped in the same transaction that records each firing. */
  executionCount = 0;
  lastTriggered: Date | null = null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
  activatedAt: Date | null = null;
  deactivatedAt: Date | null = null;
  pausedAt: Date | null = null;
  resumedAt: Date | null = null;
  /** Soft delete: its executions stay readable and its name becomes free again. */
  deletedAt: Date | null = null;
}

export const TriggerSchema = new EntitySchema<Trigger>({
  class: Trigger,
  tableName: 'triggers',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    workflowId: { type: 'string', fieldName: 'workflow_id' },
    name: { type: 'string' },
    type: { type: 'string' },
    status: { type: 'string' },
    channel: { type: 'string' },
    configuration: { type: 'json' },
    executionCount: { type: 'integer', fieldName: 'execution_count' },
    lastTriggered: { type: 'Date', fieldName: 'last_triggered', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
    activatedAt: { type: 'Date', fieldName: 'activated_at', nullable: true },
    deactivatedAt: { type: 'Date', fieldName: 'deactivated_at', nullable: true },
    pausedAt: { type: 'Date', fieldName: 'paused_at', nullable: true },
    resumedAt: { type: 'Date', fieldName: 'resumed_at', nullable: true },
    deletedAt: { type: 'Date', fieldName: 'deleted_at', nullable: true },
  },
});

/**
 * Own status of a firing: `running` until it is linked to an execution, `failed` when none
 * could start, `skipped` when the workflow's concurrency rule started none (its execution
 * for the customer was still running).
 */
export type TriggerExecutionOwnStatus = 'running' | 'failed' | 'skipped';

export class TriggerExecution {
  [OptionalProps]?: 'executionId' | 'customerId' | 'status' | 'metadata' | 'errorCode' | 'errorMessage' | 'sourceKey' | 'completedAt' | 'triggeredAt';
  id!: string;
  organizationId!: string;
  triggerId!: string;
  workflowId!: string;
  /** The workflow execution it started; no FK, the executions table belongs to another module. */
  executionId: string | null = null;
  customerId: string | null = null;
  channel!: string;
  status: TriggerExecutionOwnStatus = 'running';
  input!: Record<string, unknown>;
  metadata: Record<string, unknown> = {};
  errorCode: string | null = null;
  errorMessage: string | null = null;
  /** Dedupe key of the source (a scheduled run's workflow id), so a retried firing records once. */
  sourceKey: string | null = null;
  triggeredAt: Date = new Date();
  /** Set only when the firing failed before any execution started. */
  completedAt: Date | null = null;
}

export const TriggerExecutionSchema = new EntitySchema<TriggerExecution>({
  class: TriggerExecution,
  tableName: 'trigger_executions',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    triggerId: { type: 'string', fieldName: 'trigger_id' },
    workflowId: { type: 'string', fieldName: 'workflow_id' },
    executionId: { type: 'string', fieldName: 'execution_id', nullable: true },
    customerId: { type: 'string', fieldName: 'customer_id', nullable: true },
    channel: { type: 'string' },
    status: { type: 'string' },
    input: { type: 'json' },
    metadata: { type: 'json' },
    errorCode: { type: 'string', fieldName: 'error_code', nullable: true },
    errorMessage: { type: 'text', fieldName: 'error_message', nullable: true },
    sourceKey: { type: 'string', fieldName: 'source_key', nullable: true },
    triggeredAt: { type: 'Date', fieldName: 'triggered_at' },
    completedAt: { type: 'Date', fieldName: 'completed_at', nullable: true },
  },
});
