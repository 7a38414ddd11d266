/**
 * Owns agent messages: a person's message to a customer (POST /v1/customers/{id}/messages),
 * sent through the customer's channel connection (or the development default) and recorded
 * in the transcript as outbound with `sender: "agent"`.
 *
 * Durable as every dual write of the service (starts/durable-start.ts): the API commits the
 * message row first (unsent), then starts its send workflow (`agentMessageWorkflow`, one per
 * message id) and stamps `temporal_started_at`; a crash between the two leaves the row
 * unstamped and the worker's reconciler starts it. The send's activity retries a provider's
 * passing failures within the provider budget, and ends the row once: `sent_at` (with the
 * `message.sent` event and, through a Meta or http connection, its `channel_deliveries`
 * row, which delivery statuses update) or `send_error`.
 *
 * The 24-hour window is checked before anything is recorded (422 WINDOW_CLOSED, nothing
 * sent); it is checked again at the send, and Meta's own 131047 ends the message
 * `customer_service_window_closed`. Handoff state is not consulted: a person may write
 * during a handoff, that is what it is for.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { HeldClaim } from '../../http/idempotency';
import { notFound, unprocessable } from '../../errors';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { AGENT_MESSAGE_WORKFLOW_TYPE, agentMessageWorkflowId, type AgentMessageOutcome, type AgentMessageWorkflowInput } from '../../../temporal/agent-messages.shared';
import { ChannelErrorTypes } from '../../../temporal/failure-types';
import { SearchAttributeKeys } from '../../../temporal/shared';
import { organizationPriority } from '../../../temporal/fairness.shared';
import { staticDetails, summaryLine } from '../../../temporal/summaries.shared';
import { endAgentSendSql, insertAgentMessage } from '../conversations/conversation.writes';
import { ConversationMessage } from '../conversations/message.entity';
import { Customer } from '../customers/customer.entity';
import { countOutboundMessageSql } from '../customers/customer.writes';
import { insertEventsSql } from '../events/outbox';
import { ChannelRejectedError, channelAdapterFor } from './fallback-adapter';
import { claimOneSql, dispatchStart, type StartKind } from '../starts/durable-start';
import { ChannelDelivery } from './channel-delivery';
import { ChannelConnection } from './channel.entity';

export interface AgentMessageIn {
  text: string;
  channel?: string | undefined;
}

/** The committed row a send workflow is started for (also what the reconciler claims). */
interface AgentMessageRow {
  id: string;
  organization_id: string;
}

/** Agent messages as a durable start kind: the `messages` rows of sender `agent` never confirmed started. */
export const AGENT_MESSAGE_START: StartKind<AgentMessageRow> = {
  table: 'messages',
  workflowType: AGENT_MESSAGE_WORKFLOW_TYPE,
  workflowId: agentMessageWorkflowId,
  // A second start of the same message finds the first run, open or closed, and leaves it be.
  conflictPolicy: 'FAIL',
  idOf: (row) => row.id,
  options: (row, services) => ({
    args: [{ messageId: row.id, organizationId: row.organization_id } satisfies AgentMessageWorkflowInput],
    searchAttributes: [{ key: SearchAttributeKeys.organizationId, value: row.organization_id }],
    staticSummary: summaryLine('agent message', row.id),
    staticDetails: staticDetails([['Message', row.id], ['Organization', row.organization_id]], services.config.BASE_URL),
    priority: organizationPriority(row.organization_id),
  }),
  // The partial index messages_agent_unstarted_idx holds exactly these rows.
  claimSql: claimOneSql('messages', `sender = 'agent' and temporal_started_at is null and created_at < now() - (? * interval '1 millisecond')`, 'created_at'),
  fromRow: (row: AgentMessageRow) => row,
};

const agentDedupeKey = (messageId: string) => `agent:${messageId}`;

/** The domain error of a channel refusal known before anything is recorded (422, its code from the error type). */
function refusal(err: ChannelRejectedError) {
  const code = err.errorType === ChannelErrorTypes.windowClosed ? 'WINDOW_CLOSED' : (err.errorType ?? 'channel_rejected').toUpperCase();
  return unprocessable(code, err.message);
}

export class AgentMessages {
  constructor(private readonly services: Services) {}

  private em() {
    return this.services.orm.em.fork() as EntityManager;
  }

  /**
   * Records the message and starts its send (after the commit). Refuses, recording nothing:
   * an unknown customer (404), a channel other than the customer's, no usable connection,
   * or a closed 24-hour window (422).
   */
  async send(organizationId: string, customerId: string, body: AgentMessageIn, claim?: HeldClaim): Promise<ConversationMessage> {
    const em = this.em();
    const customer = await em.findOne(Customer, { id: customerId, organizationId });
    if (!customer) throw notFound('CUSTOMER_NOT_FOUND', 'Customer');
    if (body.channel !== undefined && body.channel !== customer.channel) {
      throw unprocessable('CHANNEL_MISMATCH', `the customer writes on ${customer.channel}, not ${body.channel}`, 'channel');
    }
    const delivery = new ChannelDelivery(this.services);
    let connection: ChannelConnection | undefined;
    try {
      connection = await delivery.connectionForCustomer(organizationId, customer);
      if (connection) {
        const check = await delivery.checkSendable(connection, customer.id);
        if (!check.open) {
          throw new ChannelRejectedError(
            0,
            check.last
              ? `the customer's last message on ${connection.id} was more than 24 hours ago (${check.last.toISOString()}): Meta allows only templates now`
              : `the customer never wrote on ${connection.id}: Meta allows only templates`,
            ChannelErrorTypes.windowClosed,
          );
        }
      } else if (channelAdapterFor(this.services.config).name === 'transcript' && this.services.config.NODE_ENV === 'production') {
        throw new ChannelRejectedError(0, `no ${customer.channel} connection in this organization (POST /v1/channels)`, ChannelErrorTypes.notConnected);
      }
    } catch (err) {
      if (err instanceof ChannelRejectedError) throw refusal(err);
      throw err;
    }
    const id = newId('message');
    const insert = insertAgentMessage({
      id,
      organizationId,
      customerId: customer.id,
      channel: customer.channel,
      text: body.text,
      dedupeKey: agentDedupeKey(id),
      metadata: connection ? { channel_connection_id: connection.id } : {},
    });
    // With an `Idempotency-Key`, the message's id is the request's recovery point, committed with it.
    if (claim) {
      await em.transactional(async (tx) => {
        await tx.execute(insert.sql, insert.bindings);
        await claim.recordIn(tx, { message_id: id });
      });
    } else await em.getConnection().execute(insert.sql, insert.bindings);
    await dispatchStart(this.services, AGENT_MESSAGE_START, { id, organization_id: organizationId });
    return await em.findOneOrFail(ConversationMessage, { id });
  }

  /**
   * The send activity's body: sends the message once and ends its row. A provider's passing
   * failure is thrown (the activity retries it); a final refusal ends the row `failed`.
   */
  async deliver(input: AgentMessageWorkflowInput): Promise<AgentMessageOutcome> {
    const em = this.em();
    const m = await em.findOne(ConversationMessage, { id: input.messageId, organizationId: input.organizationId, sender: 'agent' });
    if (!m) return 'failed';
    if (m.sentAt) return 'sent';
    if (m.sendError) return 'failed';
    try {
      await this.sendOut(m);
    } catch (err) {
      if (!(err instanceof ChannelRejectedError)) throw err;
      await this.fail(input, { type: err.errorType ?? 'api_error', message: err.message });
      return 'failed';
    }
    await this.markSent(m);
    return 'sent';
  }

  /** Ends the row `failed` (the provider budget spent, or a final refusal); a row already ended stays as it is. */
  async fail(input: AgentMessageWorkflowInput, error: { type: string; message: string }): Promise<void> {
    await this.em().execute(endAgentSendSql('failed'), [JSON.stringify(error), input.messageId]);
  }

  private async sendOut(m: ConversationMessage): Promise<void> {
    const delivery = new ChannelDelivery(this.services);
    const connectionId = typeof m.metadata.channel_connection_id === 'string' ? m.metadata.channel_connection_id : undefined;
    const target = { organizationId: m.organizationId, customerId: m.customerId, executionId: null };
    const msg = { dedupeKey: m.dedupeKey!, nodeId: null, text: m.text };
    if (connectionId) {
      const connection = await this.em().findOne(ChannelConnection, { id: connectionId, organizationId: m.organizationId, deletedAt: null });
      if (!connection) throw new ChannelRejectedError(0, `channel connection ${connectionId} no longer exists`, ChannelErrorTypes.notConnected);
      const { sentRecord } = await delivery.send(connection, target, msg);
      if (sentRecord) await this.em().execute(sentRecord.sql, sentRecord.bindings);
      return;
    }
    // Recorded without a connection: the development default (CHANNEL_PROVIDER_URL, or the transcript alone).
    const adapter = channelAdapterFor(this.services.config);
    const [customer] = await this.em().execute<Array<{ external_id: string }>>('select external_id from customers where id = ?', [m.customerId]);
    await adapter.deliver({ ...msg, organizationId: m.organizationId, channel: m.channel, customerId: m.customerId, externalId: customer?.external_id ?? null, executionId: null });
  }

  /** Ends the row `sent` once, with the customer's counter and the `message.sent` event in the same statement (only the first end writes them). */
  private async markSent(m: ConversationMessage): Promise<void> {
    await this.em().execute(
      `with m as (${endAgentSendSql('sent')}),
            counted as (${countOutboundMessageSql('exists (select 1 from m)')}),
            sent as (${insertEventsSql(`select ?, m.organization_id, 'message.sent', jsonb_build_object(
                        'message_id', m.id, 'customer_id', m.customer_id, 'channel', m.channel, 'text', m.text, 'sender', 'agent',
                        'workflow_id', null, 'execution_id', null, 'node_id', null), now() from m`)})
       select 1`,
      [m.id, m.customerId, newId('event')],
    );
  }
}
