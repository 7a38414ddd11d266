/**
 * The hook receivers' view of a connection (the channel route and the providers' own hook
 * middleware): found by id alone (the path names it; the signature proves the sender), its
 * secrets opened one by one. Below the registry, so a provider can use it.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';
import { notFound } from '../../errors';
import { keyringOf, sealedAt } from '../../secrets';
import { ChannelConnection, type ChannelSecretName } from './channel.entity';

export const channelNotFound = () => notFound('CHANNEL_NOT_FOUND', 'Channel connection');

/** A live connection by id alone; 404 when there is none. */
export async function connectionForHook(em: EntityManager, id: string): Promise<ChannelConnection> {
  const c = await em.findOne(ChannelConnection, { id, deletedAt: null });
  if (!c) throw channelNotFound();
  return c;
}

/** Opens one sealed secret of a connection. */
export function openSecretOf(config: Config, c: ChannelConnection, name: ChannelSecretName): string | undefined {
  const sealed = c.secrets[name];
  return sealed === undefined ? undefined : keyringOf(config).open(sealed, sealedAt.channelSecret(c.id, name));
}
