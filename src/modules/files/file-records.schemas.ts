/** The schema pieces exports and reports share: their workflow and channel filters, list query and error detail. */
import { paginationQuery } from '../../http/pagination';
import { z } from '../../http/zod';
import { Channel } from '../workflows/workflow.schemas';

export const WorkflowIdsFilter = z.array(z.string().min(1).max(64)).max(100).openapi({ description: 'Workflows of your organization; another id is 404 WORKFLOW_NOT_FOUND' });
export const ChannelsFilter = z.array(Channel).max(20);
export const ListQuery = z.strictObject(paginationQuery);
export const ErrorDetail = z.object({ code: z.string(), message: z.string() });
