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
 * Sends: the connection's provider (providers/<type>/provider.ts) says whether the message may
 * go with the customer's window as it stands (`canSend`), sends it, and says what a failure
 * means (`mapError`). A retryable failure (Graph's 429, 130429, 5xx, network) is thrown as a plain
 * error (the activity retries it within the provider budget); every other failure is a
 * ChannelRejectedError with the step's error type, final. A refused token (Graph's 401 or code
 * 190) also marks the connection `unauthorized`, so later sends fail at once without calling it.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { hotExecutor, type SqlRunner } from '../../db/hot-query';
import { ChannelErrorTypes } from '../../../temporal/failure-types';
import type { Services } from '../../services';
import { ChannelRejectedError, channelAdapterFor } from './fallback-adapter';
import type { ExecutionContext } from '../executions/execution.recorder';
import type { ExecutionSink, SendReceipt } from '../executions/execution-sink';
import { ChannelConnection } from './channel.entity';
import { connectionOfRow, openSecretOf } from './channel-lookup';
import { type ChannelSend, hasCustomerServiceWindow, type ProviderFailure, type SendTarget } from './channel-provider';
import { providerOf } from './providers';
import { customerServiceWindowMsOf } from '../../config';
import { inboundConnectionSql, recipientOf, recordSentSql } from './message-status.writes';

export type { ChannelSend, SendTarget } from './channel-provider';

/**
 * What a send tells the form that waits after it: when the customer service window closes
 * (epoch ms; only for a Meta connection sent to inside its window, whose replies must arrive
 * before it closes).
 */
export type ChannelSendReceipt = SendReceipt;

/** Where a customer stands on a connection before a send (`checkSendable`). */
export interface SendCheck {
  /** The customer's id on the channel. */
  to: string;
  last: Date | undefined;
  /** Inside the 24-hour window (always true for providers without one: `http`). */
  open: boolean;
}

/** Whether a text can be sent through `c` (a voice connection speaks in a call's TwiML, not here). */
const sendsMessages = (c: ChannelConnection) => providerOf(c.type).send !== undefined;

const rejected = (type: string, message: string, status = 0) => new ChannelRejectedError(status, message, type);

/** A row of connectionFor's read: a connection's columns (all null without any), and the recipient read beside it. */
type ConnectionRow = Record<string, unknown> & {
  recipient_external_id: string | null;
  recipient_last_inbound_at: Date | null;
  inbound_connection_id: string | null;
};

export class ChannelDelivery {
  /** The customer's id and window on a connection, as connectionFor read them for the send that follows (this delivery is per activity). */
  private readonly recipients = new WeakMap<ChannelConnection, { external_id: string; last_inbound_at: Date | null }>();

  /** The statements of every send, on the hot pool. */
  private readonly hot: SqlRunner;

  constructor(private readonly services: Services) {
    this.hot = hotExecutor(services.hotPool);
  }

  private em() {
    return this.services.orm.em.fork() as EntityManager;
  }

  /**
   * The connection this execution's messages go through, and the customer's id on the
   * channel; `connection` undefined when the organization has no connection at all (the
   * development default applies, to `externalId`). Throws `channel_not_connected` when it
   * has connections but none for this message.
   */
  async connectionFor(ctx: ExecutionContext): Promise<{ connection: ChannelConnection | undefined; externalId: string | null }> {
    // One read, on the hot pool (src/db/hot-query.ts): the customer's id on the channel, beside
    // each of the organization's connections (one row of nulls without any), each row carrying
    // the one the execution's message came through and where the customer stands on it (for
    // the send's check). These were four round trips in every send's path before the provider call.
    const rows = await this.hot.execute<ConnectionRow[]>(
      `select c.*, case when c.id is not null then (${inboundConnectionSql}) end as inbound_connection_id,
              cu.external_id as recipient_external_id, w.last_inbound_at as recipient_last_inbound_at
         from (select 1) one
         left join customers cu on cu.id = ?
         left join channel_connections c on c.organization_id = ? and c.deleted_at is null
         left join channel_customer_windows w on w.connection_id = c.id and w.external_id = cu.external_id`,
      [ctx.executionId, ctx.customerId, ctx.organizationId],
    );
    const externalId = rows[0]?.recipient_external_id ?? null;
    if (!rows[0]?.id) return { connection: undefined, externalId };
    return { connection: await this.choose(ctx, rows), externalId };
  }

  /** Of the organization's connections (`rows`), the one the execution's messages go through. */
  private async choose(ctx: ExecutionContext, rows: ConnectionRow[]): Promise<ChannelConnection> {
    const all = rows.map((row) => {
      const { inbound_connection_id: _inbound, recipient_external_id, recipient_last_inbound_at, ...columns } = row;
      const c = connectionOfRow(columns);
      if (recipient_external_id !== null) this.recipients.set(c, { external_id: recipient_external_id, last_inbound_at: recipient_last_inbound_at });
      return c;
    });
    const byId = (id: string) => all.find((c) => c.id === id);
    const inbound = rows[0]!.inbound_connection_id;
    const viaInbound = inbound ? byId(inbound) : undefined;
    if (viaInbound) return viaInbound;
    const [wf] = await this.hot.execute<Array<{ channel_connection_id: string | null }>>('select channel_connection_id from workflows where id = ?', [ctx.workflowId]);
    if (wf?.channel_connection_id) {
      const c = byId(wf.channel_connection_id);
      if (!c) throw rejected(ChannelErrorTypes.notConnected, `the workflow's channel connection ${wf.channel_connection_id} no longer exists`);
      return c;
    }
    const active = all.filter((c) => c.channel === ctx.channel && c.status === 'active');
    if (active.length === 1) return active[0]!;
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
    const ofChannel = all.filter((c) => c.channel === customer.channel && sendsMessages(c));
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
    const open = !hasCustomerServiceWindow(providerOf(c.type), c) || (last !== undefined && Date.now() - last.getTime() < customerServiceWindowMsOf(this.services.config));
    return { to: customer.external_id, last, open };
  }

  /**
   * Sends `msg` to the target's customer through `c` (its provider's `send`). The provider's
   * message id is for the caller to keep: `sentRecord`, the write the step's or prompt's
   * statement commits with it (a person's message writes it alone: agent-messages.ts).
   */
  async send(c: ChannelConnection, ctx: SendTarget, msg: ChannelSend): Promise<ChannelSendReceipt> {
    const provider = providerOf(c.type);
    if (!provider.send) throw rejected(ChannelErrorTypes.undeliverable, `channel connection ${c.id} (${c.type}) sends no messages outside a call`);
    const check = await this.checkSendable(c, ctx.customerId);
    const window = { open: check.open, last: check.last };
    const refusal = provider.canSend(msg, window, c);
    if (refusal) throw rejected(ChannelErrorTypes.windowClosed, refusal);
    let providerMessageId: string | undefined;
    try {
      providerMessageId = await provider.send({ connection: c, config: this.services.config, secret: (name) => openSecretOf(this.services.config, c, name), to: check.to, target: ctx, msg, window });
    } catch (err) {
      const failure = provider.mapError(err, c);
      if (!failure) throw err;
      throw await this.failed(c, failure, err);
    }
    return {
      ...(hasCustomerServiceWindow(provider, c) && check.open ? { windowClosesAt: check.last!.getTime() + customerServiceWindowMsOf(this.services.config) } : {}),
      ...(providerMessageId ? { sentRecord: recordSentSql({ organizationId: ctx.organizationId, connectionId: c.id, dedupeKey: msg.dedupeKey, providerMessageId }) } : {}),
    };
  }

  /** What a provider's failure does: retried (thrown as is), or the step's final error (a refused token marking the connection). */
  private async failed(c: ChannelConnection, failure: ProviderFailure, err: unknown): Promise<unknown> {
    switch (failure.kind) {
      case 'retryable':
        return err;
      case 'unauthorized':
        if (failure.marksConnection !== false) {
          await this.em().getConnection().execute("update channel_connections set status = 'unauthorized', updated_at = now() where id = ? and status = 'active'", [c.id]);
        }
        return rejected(ChannelErrorTypes.unauthorized, failure.message, failure.status);
      case 'window_closed':
        return rejected(ChannelErrorTypes.windowClosed, failure.message, failure.status);
      case 'undeliverable':
        return rejected(ChannelErrorTypes.undeliverable, failure.message, failure.status);
      default:
        return new ChannelRejectedError(failure.status, failure.message);
    }
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
  /**
   * The route of each activity's messages, by its context object: the nodes of a run of
   * messages (one activity, one context) go through the connection read for the first, one
   * read a run instead of one a node. A failed read is not kept (a run stops at its first failure).
   */
  const routes = new WeakMap<ExecutionContext, ReturnType<ChannelDelivery['connectionFor']>>();
  const routeOf = (ctx: ExecutionContext) => {
    let route = routes.get(ctx);
    if (!route) {
      route = channels.connectionFor(ctx);
      routes.set(ctx, route);
      route.catch(() => routes.delete(ctx));
    }
    return route;
  };

  // Read only: the twilio_voice provider owns voice_calls.
  const isPhoneCall = async (executionId: string): Promise<boolean> =>
    (await em().execute<unknown[]>('select 1 from voice_calls where execution_id = ? limit 1', [executionId])).length > 0;

  return async (ctx, msg) => {
    // A call hears its messages in the TwiML answers of the voice hook (providers/twilio_voice): the
    // transcript row is the delivery. Other voice-channel conversations go through the provider.
    if (ctx.channel === 'voice' && (await isPhoneCall(ctx.executionId))) return;
    const { connection, externalId } = await routeOf(ctx);
    if (connection) return await channels.send(connection, ctx, msg);
    if (adapter.name === 'transcript' && services.config.NODE_ENV === 'production') {
      throw new ChannelRejectedError(0, `no ${ctx.channel} connection in this organization (POST /v1/channels)`, ChannelErrorTypes.notConnected);
    }
    await adapter.deliver({
      dedupeKey: msg.dedupeKey,
      organizationId: ctx.organizationId,
      channel: ctx.channel,
      customerId: ctx.customerId,
      externalId: adapter.name === 'http' ? externalId : null,
      executionId: ctx.executionId,
      nodeId: msg.nodeId,
      text: msg.text,
    });
  };
}
