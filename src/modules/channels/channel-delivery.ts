/**
 * Owns outbound delivery through an organization's channel connections: which connection
 * an execution's message goes through, the 24-hour customer service window, the provider
 * call, and what each provider answer means for the step.
 *
 * Routing: the connection the execution's inbound message came through; otherwise the
 * workflow's `channel_connection_id`; otherwise the organization's only active connection
 * of the execution's channel. An organization without any connection falls back to the
 * development default (CHANNEL_PROVIDER_URL, or the transcript alone outside production);
 * one with connections but none for this message fails the step (`channel_not_connected`).
 *
 * Answers: a retryable Graph failure (429, 130429, 5xx, network) is thrown as a plain error
 * (the activity retries it within the provider budget); every other failure is a
 * ChannelRejectedError with the step's error type, final. A 401 or code 190 also marks the
 * connection `unauthorized`, so later sends fail at once without calling Meta.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { ChannelErrorTypes } from '../../../temporal/failure-types';
import type { MessageTemplateSpec } from '../../../temporal/executions.shared';
import type { Services } from '../../services';
import { ChannelRejectedError } from '../executions/channel-adapter';
import type { ExecutionContext } from '../executions/execution.recorder';
import { ChannelConnection } from './channel.entity';
import { ChannelService } from './channel.service';
import { GraphError, sendInstagram, sendWhatsApp } from './meta-graph';
import { customerServiceWindowMsOf } from '../../config';
import { inboundConnectionOf, recipientOf, recordSent } from './message-status.writes';

export interface ChannelSend {
  dedupeKey: string;
  nodeId: string;
  text: string;
  template?: MessageTemplateSpec;
}

/**
 * What a send tells the form that waits after it: when the customer service window closes
 * (epoch ms; only for a Meta connection sent to inside its window, whose replies must arrive
 * before it closes).
 */
export interface ChannelSendReceipt {
  windowClosesAt?: number;
}

const rejected = (type: string, message: string, status = 0) => new ChannelRejectedError(status, message, type);

export class ChannelDelivery {
  constructor(private readonly services: Services) {}

  private em() {
    return this.services.orm.em.fork() as EntityManager;
  }

  /**
   * The connection this execution's messages go through; undefined when the organization
   * has no connection at all (the development default applies). Throws `channel_not_connected`
   * when it has connections but none for this message.
   */
  async connectionFor(ctx: ExecutionContext): Promise<ChannelConnection | undefined> {
    const em = this.em();
    // One read for an organization without connections (the common case in development).
    const all = await em.find(ChannelConnection, { organizationId: ctx.organizationId, deletedAt: null });
    if (all.length === 0) return undefined;
    const byId = (id: string) => all.find((c) => c.id === id);
    const inbound = await inboundConnectionOf(em, ctx.executionId);
    const viaInbound = inbound ? byId(inbound) : undefined;
    if (viaInbound) return viaInbound;
    const [wf] = await em.getConnection().execute<Array<{ channel_connection_id: string | null }>>('select channel_connection_id from workflows where id = ?', [ctx.workflowId]);
    if (wf?.channel_connection_id) {
      const c = byId(wf.channel_connection_id);
      if (!c) throw rejected(ChannelErrorTypes.notConnected, `the workflow's channel connection ${wf.channel_connection_id} no longer exists`);
      return c;
    }
    const active = all.filter((c) => c.channel === ctx.channel && c.status === 'active');
    if (active.length === 1) return active[0];
    throw rejected(
      ChannelErrorTypes.notConnected,
      active.length === 0
        ? `no active ${ctx.channel} connection in this organization`
        : `${active.length} active ${ctx.channel} connections: set the workflow's channel_connection_id to choose one`,
    );
  }

  /** Sends `msg` to the execution's customer through `c`; keeps the provider's message id. */
  async send(c: ChannelConnection, ctx: ExecutionContext, msg: ChannelSend): Promise<ChannelSendReceipt> {
    if (c.status === 'unauthorized') throw rejected(ChannelErrorTypes.unauthorized, `channel connection ${c.id} is unauthorized: give it a new access token`);
    if (c.status === 'disabled') throw rejected(ChannelErrorTypes.disabled, `channel connection ${c.id} is disabled`);
    const em = this.em();
    // The recipient and where their window stands, in one read.
    const [customer] = ctx.customerId ? await recipientOf(em, c.id, ctx.customerId) : [];
    if (!customer) throw rejected(ChannelErrorTypes.undeliverable, 'the execution has no customer to send to');
    const svc = new ChannelService(em, this.services.config);
    const last = customer.last_inbound_at ? new Date(customer.last_inbound_at) : undefined;
    const windowMs = customerServiceWindowMsOf(this.services.config);
    const open = last !== undefined && Date.now() - last.getTime() < windowMs;
    const providerMessageId =
      c.type === 'http' ? await this.sendHttp(c, svc, ctx, msg, customer.external_id) : await this.sendMeta(c, svc, msg, customer.external_id, last, open);
    if (providerMessageId) await recordSent(em, { organizationId: ctx.organizationId, connectionId: c.id, dedupeKey: msg.dedupeKey, providerMessageId });
    return c.type !== 'http' && open ? { windowClosesAt: last!.getTime() + windowMs } : {};
  }

  private async sendMeta(c: ChannelConnection, svc: ChannelService, msg: ChannelSend, to: string, last: Date | undefined, open: boolean): Promise<string> {
    const template = c.type === 'whatsapp_cloud' ? msg.template : undefined;
    if (!open && !template) {
      throw rejected(
        ChannelErrorTypes.windowClosed,
        last ? `the customer's last message was more than 24 hours ago (${last.toISOString()}); give the node a template` : 'the customer never wrote on this connection; give the node a template',
      );
    }
    const call = { baseUrl: this.services.config.META_GRAPH_API_URL, accessToken: svc.openSecret(c, 'access_token') ?? '', timeoutMs: this.services.config.CHANNEL_PROVIDER_TIMEOUT_MS };
    try {
      if (c.type === 'instagram') return await sendInstagram(call, c.config.instagram_account_id!, to, msg.text);
      return await sendWhatsApp(call, c.config.phone_number_id!, to, open ? { text: msg.text } : { template: template! });
    } catch (err) {
      if (!(err instanceof GraphError)) throw err;
      switch (err.kind) {
        case 'retryable':
          throw err;
        case 'unauthorized':
          await this.em().getConnection().execute("update channel_connections set status = 'unauthorized', updated_at = now() where id = ? and status = 'active'", [c.id]);
          throw rejected(ChannelErrorTypes.unauthorized, `Meta refused the access token of ${c.id}: ${err.message}`, err.status);
        case 'window_closed':
          throw rejected(ChannelErrorTypes.windowClosed, err.message, err.status);
        case 'undeliverable':
          throw rejected(ChannelErrorTypes.undeliverable, err.message, err.status);
        default:
          throw new ChannelRejectedError(err.status, err.message);
      }
    }
  }

  /** The generic adapter, per organization: the body of CHANNEL_PROVIDER_URL's, with the connection's secret as a Bearer token. */
  private async sendHttp(c: ChannelConnection, svc: ChannelService, ctx: ExecutionContext, msg: ChannelSend, to: string): Promise<string | undefined> {
    const secret = svc.openSecret(c, 'secret');
    const res = await fetch(c.config.url!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': msg.dedupeKey, ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
      body: JSON.stringify({
        idempotency_key: msg.dedupeKey,
        channel: c.channel,
        to,
        customer_id: ctx.customerId,
        text: msg.text,
        execution_id: ctx.executionId,
        node_id: msg.nodeId,
      }),
      signal: AbortSignal.timeout(this.services.config.CHANNEL_PROVIDER_TIMEOUT_MS),
      redirect: 'manual',
    });
    const answer = (await res.json().catch(() => undefined)) as { id?: unknown; message_id?: unknown } | undefined;
    if (res.status >= 200 && res.status < 300) {
      const id = answer?.message_id ?? answer?.id;
      return typeof id === 'string' && id.length <= 255 ? id : undefined;
    }
    if (res.status === 401 || res.status === 403) throw rejected(ChannelErrorTypes.unauthorized, `channel provider answered ${res.status}`, res.status);
    if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) throw new ChannelRejectedError(res.status, `channel provider answered ${res.status}`);
    throw new Error(`channel provider answered ${res.status}`);
  }
}
