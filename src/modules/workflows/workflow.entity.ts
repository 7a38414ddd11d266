/**
 * A workflow and its revisions. The live configuration sits on the workflow; every
 * configuration change also writes an immutable revision, so an execution runs on the
 * revision it started with while the workflow is edited.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import type { WorkflowConfiguration, WorkflowStatus } from './workflow.schemas';

export class Workflow {
  [OptionalProps]?: 'description' | 'status' | 'configuration' | 'revision' | 'executionCount' | 'successCount' | 'failureCount' | 'createdAt' | 'updatedAt' | 'activatedAt' | 'deactivatedAt' | 'deletedAt' | 'channelConnectionId';
  id!: string;
  organizationId!: string;
  name!: string;
  description = '';
  status: WorkflowStatus = 'draft';
  channel!: string;
  /** The channel connection its executions send through when no inbound message chose one (src/modules/channels). */
  channelConnectionId: string | null = null;
  /** Null until the first configuration is given; activation requires one. */
  configuration: WorkflowConfiguration | null = null;
  revision = 0;
  /** Counters kept by the execution recorder, so lists never aggregate executions. */
  executionCount = 0;
  successCount = 0;
  failureCount = 0;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
  activatedAt: Date | null = null;
  deactivatedAt: Date | null = null;
  /** Soft delete: executions keep pointing at it and its name becomes free again. */
  deletedAt: Date | null = null;
}

export const WorkflowSchema = new EntitySchema<Workflow>({
  class: Workflow,
  tableName: 'workflows',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    name: { type: 'string' },
    description: { type: 'text' },
    status: { type: 'string' },
    channel: { type: 'string' },
    channelConnectionId: { type: 'string', fieldName: 'channel_connection_id', nullable: true },
    configuration: { type: 'json', nullable: true },
    revision: { type: 'integer' },
    executionCount: { type: 'integer', fieldName: 'execution_count' },
    successCount: { type: 'integer', fieldName: 'success_count' },
    failureCount: { type: 'integer', fieldName: 'failure_count' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
    activatedAt: { type: 'Date', fieldName: 'activated_at', nullable: true },
    deactivatedAt: { type: 'Date', fieldName: 'deactivated_at', nullable: true },
    deletedAt: { type: 'Date', fieldName: 'deleted_at', nullable: true },
  },
});

export class WorkflowRevision {
  [OptionalProps]?: 'createdAt';
  id!: string;
  workflowId!: string;
  revision!: number;
  configuration!: WorkflowConfiguration;
  createdAt: Date = new Date();
}

export const WorkflowRevisionSchema = new EntitySchema<WorkflowRevision>({
  class: WorkflowRevision,
  tableName: 'workflow_revisions',
  properties: {
    id: { type: 'string', primary: true },
    workflowId: { type: 'string', fieldName: 'workflow_id' },
    revision: { type: 'integer' },
    configuration: { type: 'json' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
  },
});
