/**
 * The hook receivers' view of a connection (the channel route and the providers' own hook
 * middleware): found by id alone (the path names it; the signature proves the sender), its
 * secrets opened one by one. Below the registry, so a provider can use it.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';
import { type HotPool, hotQuery } from '../../db/hot-query';
import { notFound } from '../../errors';
import { keyringOf, sealedAt } from '../../secrets';
import { ChannelConnection, type ChannelSecretName } from './channel.entity';

export const channelNotFound = () => notFound('CHANNEL_NOT_FOUND', 'Channel connection');

const BY_ID = { name: 'channel-connection-for-hook', text: 'select * from channel_connections where id = $1 and deleted_at is null' };

/**
 * A live connection by id alone, as an entity of `em`; 404 when there is none. Read on the
 * hot pool (src/db/hot-query.ts): every hook request starts with it, and the ORM's
 * `findOne` cost more CPU than the statement.
 */
export async function connectionForHook(hot: HotPool, em: EntityManager, id: string): Promise<ChannelConnection> {
  const [row] = await hotQuery<Record<string, unknown>>(hot, BY_ID, [id]);
  if (!row) throw channelNotFound();
  return em.map(ChannelConnection, row);
}

/** Opens one sealed secret of a connection. */
export function openSecretOf(config: Config, c: ChannelConnection, name: ChannelSecretName): string | undefined {
  const sealed = c.secrets[name];
  return sealed === undefined ? undefined : keyringOf(config).open(sealed, sealedAt.channelSecret(c.id, name));
}
