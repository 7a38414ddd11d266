/** `POST` / `DELETE /v1/customers/{customer_id}/handoff`: a person takes over the customer's conversation (docs/handoff.md). */
import { Answer, type AnyRoute, defineRoute } from '../../http/route';
import { MessageOut } from '../../http/openapi';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { CustomerParams, HandoffIn, HandoffOut } from '../customers/customer.schemas';
import { endHandoff, startHandoff } from './handoff.service';

export function handoffRoutes(services: Services): AnyRoute[] {
  const tag = 'Customers';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/customers/{customer_id}/handoff',
      operationId: 'startHandoff',
      summary:
        "Hand the customer to a person: their messages are recorded but start and resume nothing, and their waiting forms close (`handed_off`), until DELETE or `until`",
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: CustomerParams,
      body: HandoffIn,
      status: 201,
      alsoAnswers: [[200, 'A handoff was already in force: it now ends at the new `until` (and has the new reason, when given)']],
      response: z.object({ data: HandoffOut }),
      errors: [
        [404, 'CUSTOMER_NOT_FOUND'],
        [503, 'SERVICE_UNAVAILABLE'],
      ],
      async handler({ params, body, credential }) {
        const { handoff, created } = await startHandoff(services, {
          organizationId: credential.organizationId,
          customerId: params.customer_id,
          ...(body.reason !== undefined ? { reason: body.reason } : {}),
          ...(body.until !== undefined ? { until: new Date(body.until) } : {}),
          ...(body.channel !== undefined ? { channel: body.channel } : {}),
        });
        return created ? { data: handoff } : new Answer(200, { data: handoff });
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/customers/{customer_id}/handoff',
      operationId: 'endHandoff',
      summary: "End the customer's handoff: their next message starts conversations again",
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: CustomerParams,
      response: MessageOut,
      errors: [[404, 'CUSTOMER_NOT_FOUND | HANDOFF_NOT_FOUND']],
      async handler({ params, credential }) {
        await endHandoff(services, credential.organizationId, params.customer_id);
        return { message: `Handoff of customer ${params.customer_id} ended` };
      },
    }),
  ];
}
