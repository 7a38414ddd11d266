/**
 * A PostgreSQL LISTEN that survives its connection: a connection of its own (a pooled one
 * would be handed to other work between notifications), re-opened 2 s after any error,
 * and `onReady` after every (re)connect, since notifications sent while nobody listened
 * are lost (the caller catches up then, for example with a poll). Listeners only wake
 * work up: what a notification announces must also be found without it (the reconcilers'
 * and the dispatcher's polls), so a lost notification delays and never loses anything.
 */
import { Client as PgClient } from 'pg';
import type { Logger } from '../logger';

export interface Listening {
  stop(): Promise<void>;
}

export function listenTo(
  opts: { databaseUrl: string; channel: string; logger: Logger },
  onNotification: (payload: string | undefined) => void,
  onReady: () => void = () => undefined,
): Listening {
  let stopped = false;
  let listener: PgClient | undefined;
  const retryLater = () => {
    if (!stopped) setTimeout(() => void connect(), 2_000).unref();
  };
  const connect = async (): Promise<void> => {
    if (stopped) return;
    const client = new PgClient({ connectionString: opts.databaseUrl });
    client.on('notification', (n) => onNotification(n.payload));
    client.on('error', () => {
      if (listener === client) listener = undefined;
      void client.end().catch(() => undefined);
      retryLater();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${opts.channel}`);
      if (stopped) {
        await client.end();
        return;
      }
      listener = client;
      onReady();
    } catch (err) {
      opts.logger.warn({ err, channel: opts.channel }, 'LISTEN failed; polling only until it reconnects');
      await client.end().catch(() => undefined);
      retryLater();
    }
  };
  void connect();
  return {
    async stop() {
      stopped = true;
      const l = listener;
      listener = undefined;
      await l?.end().catch(() => undefined);
    },
  };
}
