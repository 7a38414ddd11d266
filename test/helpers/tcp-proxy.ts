/**
 * A loopback TCP proxy in front of a real dependency (PostgreSQL, Temporal), so a test can
 * take the dependency away from the service and give it back: `cut()` drops every open
 * connection and refuses new ones (what clients see when the server dies), `restore()`
 * accepts again on the same port. `stall()` drops every open connection too, but then
 * accepts new ones and never forwards them (a hung server: the connect never completes), until
 * `restore()`. The dependency itself keeps running for other tests.
 */
import net from 'node:net';

export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  stall(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let stalled = false;
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const server = net.createServer((client) => {
    if (stalled) {
      track(client);
      client.on('error', () => undefined);
      return;
    }
    const upstream = net.connect(target.port, target.host);
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    cut: stop,
    async stall() {
      stalled = true;
      for (const s of sockets) s.destroy();
    },
    async restore() {
      if (stalled) {
        stalled = false;
        for (const s of sockets) s.destroy();
      }
      if (!server.listening) await listen(port);
    },
    close: stop,
  };
}
