/**
 * POSTs sent and timed from a worker thread of their own. The executions benchmark runs our
 * worker, the Temporal SDK and the load in one process, whose event loop is busy (its delay
 * p99 is ~20 ms under the benchmark's load): a response timed there waits for that loop
 * before its clock is read, so the POST's answer time would include the bench's own queue.
 * In a thread the request is sent, and its answer read and timed, on an idle loop, as a
 * client elsewhere would.
 */
import { Worker } from 'node:worker_threads';

// Plain JavaScript (evaluated): the thread needs no TypeScript loader.
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', async ({ id, url, headers, body }) => {
  const sent = performance.now();
  try {
    const res = await fetch(url, { method: 'POST', headers, body });
    const text = await res.text();
    parentPort.postMessage({ id, status: res.status, text, ms: performance.now() - sent });
  } catch (err) {
    parentPort.postMessage({ id, error: String(err) });
  }
});`;

export interface TimedAnswer {
  status: number;
  text: string;
  /** From the request's send to its whole answer read, on the thread's clock. */
  ms: number;
}

export class TimedPoster {
  private readonly thread = new Worker(THREAD_SOURCE, { eval: true });
  private readonly waiting = new Map<number, { resolve: (a: TimedAnswer) => void; reject: (e: Error) => void }>();
  private nextId = 0;

  constructor() {
    this.thread.on('message', (m: { id: number; error?: string } & TimedAnswer) => {
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
      this.thread.postMessage({ id, url, headers, body: JSON.stringify(body) });
    });
  }

  close(): Promise<number> {
    return this.thread.terminate();
  }
}
