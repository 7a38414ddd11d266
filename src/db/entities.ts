/** Every entity schema the ORM knows; modules add theirs here. */
import { ApiKeySchema } from '../modules/api-keys/api-key.entity';
import { OutboxEventSchema } from '../modules/events/event.entity';
import { OrganizationSchema } from '../modules/organizations/organization.entity';
import { WorkflowRevisionSchema, WorkflowSchema } from '../modules/workflows/workflow.entity';

export const entities = [OrganizationSchema, ApiKeySchema, WorkflowSchema, WorkflowRevisionSchema, OutboxEventSchema];
