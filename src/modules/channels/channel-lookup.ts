/**
 * The hook receivers' view of a connection (the channel route and the providers' own hook
 * middleware): found by id alone (the path names it; the signature proves the sender), its
 * secrets opened one by one. Below the registry, so a provider can use it.
 */
import type { Config } from '../../config';
import { type HotPool, hotQuery } from '../../db/hot-query';
import { notFound } from '../../errors';
import { keyringOf, sealedAt } from '../../secrets';
import { ChannelConnection, type ChannelSecretName } from './channel.entity';

export const channelNotFound = () => notFound('CHANNEL_NOT_FOUND', 'Channel connection');

const BY_ID = { name: 'channel-connection-for-hook', text: 'select * from channel_connections where id = $1 and deleted_at is null' };

/**
 * A live connection by id alone; 404 when there is none. Read on the hot pool
 * (src/db/hot-query.ts): every hook request starts with it, and the ORM's `findOne` and
 * hydration cost more CPU than the statement.
 */
export async function connectionForHook(hot: HotPool, id: string): Promise<ChannelConnection> {
  const [row] = await hotQuery<Record<string, unknown>>(hot, BY_ID, [id]);
  if (!row) throw channelNotFound();
  return connectionOfRow(row);
}

const dateOf = (v: unknown): Date | null => (v === null || v === undefined ? null : v instanceof Date ? v : new Date(v as string));

/**
 * A `channel_connections` row (`select *`, or `c.*` of a join) as a connection, without the
 * ORM: not managed by any EntityManager, so never flushed (the paths that read it this way
 * change connections by SQL). `em.map` was a tenth of a hook's own CPU.
 */
export function connectionOfRow(row: Record<string, unknown>): ChannelConnection {
  return Object.assign(new ChannelConnection(), {
    id: row.id as string,
    organizationId: row.organization_id as string,
    type: row.type as ChannelConnection['type'],
    channel: row.channel as string,
    name: row.name as string,
    status: row.status as ChannelConnection['status'],
    config: row.config as ChannelConnection['config'],
    secrets: row.secrets as ChannelConnection['secrets'],
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
    deletedAt: dateOf(row.deleted_at),
  });
}

/** Opens one sealed secret of a connection. */
export function openSecretOf(config: Config, c: ChannelConnection, name: ChannelSecretName): string | undefined {
  const sealed = c.secrets[name];
  return sealed === undefined ? undefined : keyringOf(config).open(sealed, sealedAt.channelSecret(c.id, name));
}
