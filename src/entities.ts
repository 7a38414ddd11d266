/**
 * Every entity schema the ORM knows, handed to `createOrm` (src/db/orm.ts) by whoever opens
 * the database: the database layer imports no module. A module with a new entity adds it here.
 */
import { ApiKeySchema } from './modules/api-keys/api-key.entity';
import { ApplicationSchema } from './modules/applications/application.entity';
import { UserSchema } from './modules/users/user.entity';
import { OAuthClientSchema } from './modules/oauth/oauth-client.entity';
import { OutboxEventSchema } from './modules/events/event.entity';
import { OrganizationSchema } from './modules/organizations/organization.entity';
import { CustomerSchema } from './modules/customers/customer.entity';
import { ConversationMessageSchema } from './modules/conversations/message.entity';
import { ExecutionSchema, ExecutionStepSchema } from './modules/executions/execution.entity';
import { KnowledgeBaseArticleSchema, KnowledgeBaseSchema } from './modules/knowledge-bases/knowledge-base.entity';
import { TriggerExecutionSchema, TriggerSchema } from './modules/triggers/trigger.entity';
import { WorkflowRevisionSchema, WorkflowSchema } from './modules/workflows/workflow.entity';
import { WebhookLogSchema, WebhookSchema } from './modules/webhooks/webhook.entity';
import { AnalyticsExportSchema } from './modules/exports/export.entity';
import { ReportSchema } from './modules/reports/report.entity';
import { FileColumnsSchema } from './modules/files/file-record.entity';
import { ChannelConnectionSchema } from './modules/channels/channel.entity';

export const entities = [
  OrganizationSchema,
  ApiKeySchema,
  WorkflowSchema,
  WorkflowRevisionSchema,
  OutboxEventSchema,
  // customers (and their messages), executions, knowledge bases
  CustomerSchema,
  ConversationMessageSchema,
  ExecutionSchema,
  ExecutionStepSchema,
  KnowledgeBaseSchema,
  KnowledgeBaseArticleSchema,
  // triggers
  TriggerSchema,
  TriggerExecutionSchema,
  // webhooks
  WebhookSchema,
  WebhookLogSchema,
  // credentials: JWT applications, users who consent to OAuth clients
  ApplicationSchema,
  UserSchema,
  OAuthClientSchema,
  // reports and exports, and the file columns they share (abstract: no table)
  FileColumnsSchema,
  AnalyticsExportSchema,
  ReportSchema,
  // channel connections
  ChannelConnectionSchema,
];
