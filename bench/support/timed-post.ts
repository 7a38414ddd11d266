/**
 * POSTs sent and timed by a client process of their own. The executions benchmark runs our
 * worker, the Temporal SDK and the load in one process, whose event loop is busy (its delay
 * p99 is ~20 ms under the benchmark's load): a response timed there waits for that loop
 * before its clock is read, so the POST's answer time would include the bench's own queue.
 * A worker thread of that process (the first fix) still shared its scheduling: Linux groups
 * a session's processes for CPU time (autogroup), and the bench's session holds our worker
 * and the Temporal server, the two busiest processes of the run. This client is a process
 * of its own session, as a client on another machine (or a container, whose cgroup is its
 * own) would be; it exits with the bench (`disconnect`).
 */
import { type ChildProcess, spawn } from 'node:child_process';

// Plain JavaScript (evaluated): the client process needs no TypeScript loader. node:http with
// a keep-alive agent, as a load generator is (autocannon, in the api benchmark): fetch
// (undici) spent 3–5 ms more per answer of this client's share of two saturated cores, in
// alternating runs (docs/performance.md), time the POST's answer did not contain.
const CLIENT_SOURCE = `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true });
const post = (url, headers, body) => new Promise((resolve, reject) => {
  const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
    res.on('error', reject);
  });
  req.on('error', reject);
  req.end(body);
});
process.on('message', async ({ id, url, headers, body }) => {
  const sent = performance.now();
  try {
    const { status, text } = await post(url, headers, body);
    process.send({ id, status, text, ms: performance.now() - sent });
  } catch (err) {
    process.send({ id, error: String(err) });
  }
});
process.on('disconnect', () => process.exit(0));`;

export interface TimedAnswer {
  status: number;
  text: string;
  /** From the request's send to its whole answer read, on the client's clock. */
  ms: number;
}

export class TimedPoster {
  private readonly client: ChildProcess = spawn(process.execPath, ['-e', CLIENT_SOURCE], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], detached: true });
  private readonly waiting = new Map<number, { resolve: (a: TimedAnswer) => void; reject: (e: Error) => void }>();
  private nextId = 0;

  constructor() {
    this.client.on('message', (m: { id: number; error?: string } & TimedAnswer) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) w?.reject(new Error(m.error));
      else w?.resolve({ status: m.status, text: m.text, ms: m.ms });
    });
  }

  post(url: string, headers: Record<string, string>, body: unknown): Promise<TimedAnswer> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.client.send({ id, url, headers, body: JSON.stringify(body) });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.client.once('exit', () => resolve());
      this.client.kill();
    });
  }
}
