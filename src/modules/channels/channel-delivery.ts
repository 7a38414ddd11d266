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
import type { MessageTemplateSpec, PromptChoices } from '../../../temporal/executions.shared';
import type { Services } from '../../services';
import { ChannelRejectedError, channelAdapterFor } from './fallback-adapter';
import type { ExecutionContext } from '../executions/execution.recorder';
import type { ExecutionSink, SendReceipt } from '../executions/execution-sink';
import { ChannelConnection } from './channel.entity';
import { ChannelService } from './channel.service';
import { GraphError, sendInstagram, sendWhatsApp } from './providers/meta/meta-graph';
import { customerServiceWindowMsOf } from '../../config';
import { inboundConnectionSql, recipientOf, recordSent } from './message-status.writes';

export interface ChannelSend {
  dedupeKey: string;
  /** The execution's node that sends it (null: an agent message). */
  nodeId: string | null;
  text: string;
  template?: MessageTemplateSpec;
  /** A scored form field's answers: sent as a WhatsApp interactive list inside the window. */
  choices?: PromptChoices;
}

/**
 * What a send tells the form that waits after it: when the customer service window closes
 * (epoch ms; only for a Meta connection sent to inside its window, whose replies must arrive
 * before it closes).
 */
export type ChannelSendReceipt = SendReceipt;

/** Who a send is for: an execution's context, or an agent message's (no execution). */
export type SendTarget = Pick<ExecutionContext, 'organizationId' | 'customerId'> & { executionId: string | null };

/** Where a customer stands on a connection before a send (`checkSendable`). */
export interface SendCheck {
  /** The customer's id on the channel. */
  to: string;
  last: Date | undefined;
  /** Inside the 24-hour window (always true for connections without one: `http`). */
  open: boolean;
}

/** The connection types a text can be sent through (a voice connection speaks in a call's TwiML, not here). */
const MESSAGING_TYPES: ReadonlySet<string> = new Set(['whatsapp_cloud', 'instagram', 'http']);

const rejected = (type: string, message: string, status = 0) => new ChannelRejectedError(status, message, type);

/** The recipient columns connectionFor reads beside each connection. */
interface RecipientColumns {
  recipient_external_id: string | null;
  recipient_last_inbound_at: Date | null;
}

export class ChannelDelivery {
  /** The customer's id and window on a connection, as connectionFor read them for the send that follows (this delivery is per activity). */
  private readonly recipients = new WeakMap<ChannelConnection, { external_id: string; last_inbound_at: Date | null }>();

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
    // One read: the organization's connections, each row carrying the one the execution's
    // message came through and where the customer stands on it (`Recipient`, for the send's
    // check). These were three round trips in every send's path before the provider call.
    const rows = await em.getConnection().execute<Array<Record<string, unknown> & RecipientColumns & { inbound_connection_id: string | null }>>(
      `select c.*, (${inboundConnectionSql}) as inbound_connection_id,
              cu.external_id as recipient_external_id, w.last_inbound_at as recipient_last_inbound_at
         from channel_connections c
         left join customers cu on cu.id = ?
         left join channel_customer_windows w on w.connection_id = c.id and w.external_id = cu.external_id
        where c.organization_id = ? and c.deleted_at is null`,
      [ctx.executionId, ctx.customerId, ctx.organizationId],
    );
    if (rows.length === 0) return undefined;
    const all = rows.map((row) => {
      const { inbound_connection_id: _inbound, recipient_external_id, recipient_last_inbound_at, ...columns } = row;
      const c = em.map(ChannelConnection, columns);
      if (recipient_external_id !== null) this.recipients.set(c, { external_id: recipient_external_id, last_inbound_at: recipient_last_inbound_at });
      return c;
    });
    const byId = (id: string) => all.find((c) => c.id === id);
    const inbound = rows[0]!.inbound_connection_id;
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

  /**
   * The connection a person's message to a customer goes through (no execution to follow):
   * the one of the customer's channel they last wrote through, otherwise the organization's
   * only active one of that channel; undefined when the organization has no connection at all
   * (the development default applies). Throws `channel_not_connected` otherwise.
   */
  async connectionForCustomer(organizationId: string, customer: { channel: string; externalId: string }): Promise<ChannelConnection | undefined> {
    const em = this.em();
    const all = await em.find(ChannelConnection, { organizationId, deletedAt: null });
    if (all.length === 0) return undefined;
    const ofChannel = all.filter((c) => c.channel === customer.channel && MESSAGING_TYPES.has(c.type));
    if (ofChannel.length > 0) {
      const [latest] = await em.getConnection().execute<Array<{ connection_id: string }>>(
        `select connection_id from channel_customer_windows where external_id = ? and connection_id in (${ofChannel.map(() => '?').join(', ')})
          order by last_inbound_at desc limit 1`,
        [customer.externalId, ...ofChannel.map((c) => c.id)],
      );
      const wroteThrough = ofChannel.find((c) => c.id === latest?.connection_id);
      if (wroteThrough) return wroteThrough;
    }
    const active = ofChannel.filter((c) => c.status === 'active');
    if (active.length === 1) return active[0];
    throw rejected(
      ChannelErrorTypes.notConnected,
      active.length === 0 ? `no active ${customer.channel} connection in this organization` : `${active.length} active ${customer.channel} connections and the customer never wrote through one`,
    );
  }

  /**
   * What a send through `c` to the customer needs settled first: the connection usable, the
   * customer known, and where their 24-hour window stands. Throws the step's error type
   * otherwise (a closed window only matters without a template, which the caller decides).
   */
  async checkSendable(c: ChannelConnection, customerId: string | null): Promise<SendCheck> {
    if (c.status === 'unauthorized') throw rejected(ChannelErrorTypes.unauthorized, `channel connection ${c.id} is unauthorized: give it a new access token`);
    if (c.status === 'disabled') throw rejected(ChannelErrorTypes.disabled, `channel connection ${c.id} is disabled`);
    // The recipient and where their window stands: read with the connection by connectionFor, or in one read here.
    const known = this.recipients.get(c);
    const [customer] = known ? [known] : customerId ? await recipientOf(this.em(), c.id, customerId) : [];
    if (!customer) throw rejected(ChannelErrorTypes.undeliverable, 'there is no customer to send to');
    const last = customer.last_inbound_at ? new Date(customer.last_inbound_at) : undefined;
    const open = c.type === 'http' || (last !== undefined && Date.now() - last.getTime() < customerServiceWindowMsOf(this.services.config));
    return { to: customer.external_id, last, open };
  }

  /** Sends `msg` to the target's customer through `c`; keeps the provider's message id. */
  async send(c: ChannelConnection, ctx: SendTarget, msg: ChannelSend): Promise<ChannelSendReceipt> {
    const check = await this.checkSendable(c, ctx.customerId);
    const em = this.em();
    const svc = new ChannelService(em, this.services.config);
    const providerMessageId = c.type === 'http' ? await this.sendHttp(c, svc, ctx, msg, check.to) : await this.sendMeta(c, svc, msg, check);
    if (providerMessageId) await recordSent(em, { organizationId: ctx.organizationId, connectionId: c.id, dedupeKey: msg.dedupeKey, providerMessageId });
    return c.type !== 'http' && check.open ? { windowClosesAt: check.last!.getTime() + customerServiceWindowMsOf(this.services.config) } : {};
  }

  private async sendMeta(c: ChannelConnection, svc: ChannelService, msg: ChannelSend, { to, last, open }: SendCheck): Promise<string> {
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
      if (!open) return await sendWhatsApp(call, c.config.phone_number_id!, to, { template: template! });
      return await sendWhatsApp(call, c.config.phone_number_id!, to, msg.choices ? { text: msg.text, list: msg.choices } : { text: msg.text });
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
  private async sendHttp(c: ChannelConnection, svc: ChannelService, ctx: SendTarget, msg: ChannelSend, to: string): Promise<string | undefined> {
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

/**
 * The live execution sink's send (handed to it by the worker's composition,
 * temporal/activities/index.ts): an organization's own connection first; without any, the
 * development fallback adapter (fallback-adapter.ts).
 */
export function executionSender(services: Services): ExecutionSink['deliver'] {
  const em = () => services.orm.em.fork() as EntityManager;
  const adapter = channelAdapterFor(services.config);
  const channels = new ChannelDelivery(services);

  const externalIdOf = async (ctx: ExecutionContext): Promise<string | null> => {
    if (!ctx.customerId) return null;
    const [row] = await em().execute<Array<{ external_id: string }>>('select external_id from customers where id = ?', [ctx.customerId]);
    return row?.external_id ?? null;
  };

  // Read only: the twilio_voice provider owns voice_calls.
  const isPhoneCall = async (executionId: string): Promise<boolean> =>
    (await em().execute<unknown[]>('select 1 from voice_calls where execution_id = ? limit 1', [executionId])).length > 0;

  return async (ctx, msg) => {
    // A call hears its messages in the TwiML answers of the voice hook (providers/twilio_voice): the
    // transcript row is the delivery. Other voice-channel conversations go through the provider.
    if (ctx.channel === 'voice' && (await isPhoneCall(ctx.executionId))) return;
    const connection = await channels.connectionFor(ctx);
    if (connection) return await channels.send(connection, ctx, msg);
    if (adapter.name === 'transcript' && services.config.NODE_ENV === 'production') {
      throw new ChannelRejectedError(0, `no ${ctx.channel} connection in this organization (POST /v1/channels)`, ChannelErrorTypes.notConnected);
    }
    await adapter.deliver({
      dedupeKey: msg.dedupeKey,
      organizationId: ctx.organizationId,
      channel: ctx.channel,
      customerId: ctx.customerId,
      externalId: adapter.name === 'http' ? await externalIdOf(ctx) : null,
      executionId: ctx.executionId,
      nodeId: msg.nodeId,
      text: msg.text,
    });
  };
}
