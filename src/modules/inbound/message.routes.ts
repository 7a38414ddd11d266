/** `POST /v1/messages`: a customer message comes in (tagged Executions in the OpenAPI document). */
import { Answer, type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { InboundServices } from './inbound-state';
import { InboundResultOut, MessageIn } from './message.schemas';
import { readTargets, receiveMessage, resumeMessage } from './message.service';

export function inboundRoutes(services: InboundServices): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/messages',
      operationId: 'receiveMessage',
      summary: 'Receive a customer message: resumes the execution waiting for it, or starts the workflows it triggers',
      tag: 'Executions',
      scope: 'workflows:write',
      limits: ['execution_ops'],
      body: MessageIn,
      status: 201,
      alsoAnswers: [[200, 'A redelivery (same provider_message_id on the channel): the first outcome; nothing new is recorded or started']],
      response: z.object({ data: InboundResultOut }),
      // The matching triggers, workflows and customer: from memory, or read while the limits are checked.
      prefetch: ({ body, credential }) => readTargets(services, credential.organizationId, body),
      async handler({ body, credential, prefetched, claim }) {
        // One organization's flood waits its turn here while others' messages arrive (inbound-state.ts, `intake`).
        const organizationId = credential.organizationId;
        const received = await services.intake.run(organizationId, () => receiveMessage(services, organizationId, body, prefetched, claim ? { claim } : {}));
        return received.duplicate ? new Answer(200, { data: received.result }) : { data: received.result };
      },
      // The first try recorded the message, and died before its answer was stored.
      async resume({ credential, point }) {
        return { data: await resumeMessage(services, credential.organizationId, point) };
      },
    }),
  ];
}
