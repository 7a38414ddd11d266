/**
 * Owns the answers Node's HTTP parser gives before Koa sees a request (oversized headers,
 * malformed requests, header timeouts). By default Node writes a bare status line; here the
 * client gets the same JSON error envelope and `X-Request-Id` as every other error, and the
 * socket is closed (the parser cannot resynchronise after such an error).
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';

const ANSWERS: Record<string, { status: number; reason: string; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    code: 'HEADERS_TOO_LARGE',
    message: 'The request headers are too large',
  },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', code: 'REQUEST_TIMEOUT', message: 'The request was not received in time' },
};
const MALFORMED = { status: 400, reason: 'Bad Request', code: 'INVALID_REQUEST', message: 'Malformed HTTP request' };

export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A reset or a half-written answer: nobody is left to read an answer.
    if (err.code === 'ECONNRESET' || !socket.writable || (socket as Duplex & { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const answer = ANSWERS[err.code ?? ''] ?? MALFORMED;
    const requestId = randomUUID();
    const body = JSON.stringify({ error: { code: answer.code, message: answer.message } });
    logger.info({ request_id: requestId, status: answer.status, reason: err.code }, 'request refused by the HTTP parser');
    socket.end(
      `HTTP/1.1 ${answer.status} ${answer.reason}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  });
}
