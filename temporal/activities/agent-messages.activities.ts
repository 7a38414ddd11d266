/**
 * Owns the agent message send activities: thin wrappers over src/modules/channels/agent-messages.ts
 * under the execution sends' failure rules (temporal/failures.ts): a provider's passing
 * failure is retried within the provider budget, our own database is waited out for as long
 * as it takes (the message is committed; it must end sent or failed).
 */
import { endpointsFromConfig } from '../../src/failures';
import { AgentMessages } from '../../src/modules/channels/agent-messages';
import type { Services } from '../../src/services';
import type { AgentMessageOutcome, AgentMessageWorkflowInput } from '../agent-messages.shared';
import { AGENT_MESSAGE_SEND_FAILED } from '../failure-types';
import { dependencyWaitsFor, type FailurePolicy, type ProviderBudget, runWithFailurePolicy } from '../failures';

/** The execution sends' budget (NODE_PROVIDER_BUDGET), with its own final type for the workflow to record. */
const AGENT_SEND_BUDGET: ProviderBudget = { maximumAttempts: 5, initialIntervalMs: 500, maximumIntervalMs: 10_000, finalType: AGENT_MESSAGE_SEND_FAILED };

export function createAgentMessageActivities(deps: { services: Services }) {
  const { services } = deps;
  const policy: FailurePolicy = { waits: dependencyWaitsFor(services.metrics.registry), endpoints: endpointsFromConfig(services.config), infraRetryMs: Infinity };
  const messages = new AgentMessages(services);
  return {
    async sendAgentMessage(input: AgentMessageWorkflowInput): Promise<AgentMessageOutcome> {
      return await runWithFailurePolicy(policy, AGENT_SEND_BUDGET, () => messages.deliver(input));
    },
    /** The provider budget was spent: the message ends failed with the last error. */
    async failAgentMessage(input: AgentMessageWorkflowInput & { message: string }): Promise<void> {
      await runWithFailurePolicy(policy, undefined, () => messages.fail(input, { type: 'api_error', message: input.message }));
    },
  };
}

export type AgentMessageActivities = ReturnType<typeof createAgentMessageActivities>;
