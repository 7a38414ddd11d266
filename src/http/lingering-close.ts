/**
 * Owns the answer to a request whose body we refuse unread (413), the way nginx's lingering
 * close does it. Node closes the socket as soon as a `Connection: close` answer ends; a
 * client still writing its body (undici's fetch, `node:http`: neither reads an answer before
 * it has sent the body) then hits a reset (EPIPE / ECONNRESET) and never sees the 413.
 *
 * So the whole answer is written at once (a client that reads early answers, like curl, has
 * it and can stop sending), but the response is ended, and the socket closed, only once the
 * rest of the body has been read and discarded, or a bound is reached: a client sending more
 * than LINGER_MAX_BYTES, or for longer than LINGER_MAX_MS, may see a reset.
 */
import type { Context } from 'koa';

export const LINGER_MAX_BYTES = 16 * 1024 * 1024;
export const LINGER_MAX_MS = 5_000;

export function answerThenDiscardBody(ctx: Context, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  const { req, res } = ctx;
  ctx.status = status;
  // Koa must not write (or end) this response: it is ended below once the body is drained.
  ctx.respond = false;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.setHeader('Connection', 'close');
  if (req.complete || req.destroyed) {
    res.end(text);
    return;
  }
  res.write(text);

  let discarded = 0;
  const close = () => {
    clearTimeout(timer);
    req.off('data', discard);
    req.off('end', close);
    req.off('close', close);
    if (!res.writableEnded) res.end();
  };
  const discard = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_MAX_BYTES) close();
  };
  const timer = setTimeout(close, LINGER_MAX_MS);
  req.on('data', discard);
  req.once('end', close);
  req.once('close', close);
  req.resume();
}
