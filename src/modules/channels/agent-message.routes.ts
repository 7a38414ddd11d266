/** `POST /v1/customers/{id}/messages`: a person writes to a customer (tagged Customers in the OpenAPI document). */
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { AgentMessageIn, CustomerParams, TranscriptMessageOut } from '../customers/customer.schemas';
import { toMessageOut } from '../customers/customer.routes';
import { ConversationMessage } from '../conversations/message.entity';
import { AgentMessages } from './agent-messages';

export function agentMessageRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/customers/{customer_id}/messages',
      operationId: 'sendAgentMessage',
      summary: "Send a person's message to the customer through their channel connection; recorded in the transcript with sender agent",
      tag: 'Customers',
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: CustomerParams,
      body: AgentMessageIn,
      status: 202,
      response: z.object({ data: TranscriptMessageOut }),
      errors: [
        [404, 'CUSTOMER_NOT_FOUND'],
        [422, 'WINDOW_CLOSED | CHANNEL_MISMATCH | CHANNEL_NOT_CONNECTED | CHANNEL_UNAUTHORIZED | CHANNEL_DISABLED'],
      ],
      async handler({ params, body, credential, claim }) {
        const message = await new AgentMessages(services).send(credential.organizationId, params.customer_id, body, claim);
        return { data: toMessageOut(message, undefined) };
      },
      // The first try recorded the message (its send started by the reconciler if that try did not) and died before its answer was stored.
      async resume({ credential, point }) {
        const message = await services.orm.em.fork().findOneOrFail(ConversationMessage, { id: point.message_id ?? '', organizationId: credential.organizationId });
        return { data: toMessageOut(message, undefined) };
      },
    }),
  ];
}
