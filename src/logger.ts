/** Owns the JSON logger (pino). Credentials and secrets are redacted wherever they appear. */
import pino, { type Logger } from 'pino';

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'workflow-automation' },
    redact: {
      paths: ['*.authorization', '*.headers.authorization', '*.secret', '*.key', '*.password', '*.client_secret', '*.token'],
      censor: '[redacted]',
    },
  });
}

export type { Logger };
