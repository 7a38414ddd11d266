/**
 * Owns `agentMessageWorkflow`: the send of one agent message, committed before it started
 * (durable start, src/modules/starts). The activity decides its own retries as the
 * execution's sends do (temporal/failures.ts); a final refusal is recorded on the message by
 * the activity itself, and a spent provider budget by `failAgentMessage`, so the message
 * always ends `sent` or `failed`.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { AgentMessageActivities } from '../activities/agent-messages.activities';
import type { AgentMessageOutcome, AgentMessageWorkflowInput } from '../agent-messages.shared';
import { ACTIVITY_DECIDES_RETRY, AGENT_MESSAGE_SEND_FAILED } from '../failure-types';
import { withSummary } from '../summaries.shared';

const { sendAgentMessage, failAgentMessage } = proxyActivities<AgentMessageActivities>({
  // A send is seconds (CHANNEL_PROVIDER_TIMEOUT_MS per attempt).
  startToCloseTimeout: '30 seconds',
  retry: { ...ACTIVITY_DECIDES_RETRY, nonRetryableErrorTypes: [AGENT_MESSAGE_SEND_FAILED] },
});

export async function agentMessageWorkflow(input: AgentMessageWorkflowInput): Promise<AgentMessageOutcome> {
  try {
    return await withSummary(sendAgentMessage, `agent message ${input.messageId} · send`, input);
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (!(cause instanceof ApplicationFailure) || cause.type !== AGENT_MESSAGE_SEND_FAILED) throw err;
    await withSummary(failAgentMessage, `agent message ${input.messageId} · failed`, { ...input, message: cause.message });
    return 'failed';
  }
}
