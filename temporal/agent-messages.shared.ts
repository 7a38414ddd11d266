/**
 * Owns the Temporal names of agent messages (POST /v1/customers/{id}/messages): the send
 * workflow's type, id and input. Imported by workflow code: nothing but plain values.
 */
export const AGENT_MESSAGE_WORKFLOW_TYPE = 'agentMessageWorkflow';

/** One send workflow per message (`msg_…`): a second start finds the first. */
export const agentMessageWorkflowId = (messageId: string) => `agent-message:${messageId}`;

export interface AgentMessageWorkflowInput {
  messageId: string;
  organizationId: string;
}

/** How the send ended: accepted by the provider (or the development default), or finally refused. */
export type AgentMessageOutcome = 'sent' | 'failed';
