/**
 * Owns authentication and authorization at the HTTP edge: reads the Bearer credential,
 * hands it to the first `CredentialVerifier` that accepts it (API keys, OAuth access
 * tokens, JWTs: each credential module supplies one, src/app.ts lists them), answers a
 * refusal with the contract's 401/403 and RFC 6750 challenge, and checks a route's
 * required scope. It knows no credential kind itself.
 */
import { type Credential, CredentialRefused, type CredentialVerifier } from '../credentials/credential';
import type { Scope } from '../credentials/scopes';
import { AppError } from './errors';

const unauthorized = (code: string, message: string) =>
  new AppError(401, code, message, { headers: { 'WWW-Authenticate': `Bearer error="invalid_token"` } });

/** 403 SCOPE_INSUFFICIENT with the RFC 6750 challenge naming what was missing. */
export const scopeInsufficient = (message: string, scope: string) =>
  new AppError(403, 'SCOPE_INSUFFICIENT', message, {
    headers: { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
  });

/** The HTTP answer to a verifier's refusal; anything else (an outage) passes through. */
function refusalToHttp(err: unknown): unknown {
  if (!(err instanceof CredentialRefused)) return err;
  switch (err.reason) {
    case 'invalid_api_key':
      return unauthorized('INVALID_API_KEY', err.message);
    case 'invalid_token':
      return unauthorized('INVALID_TOKEN', err.message);
    case 'insufficient_scope':
      return scopeInsufficient(err.message, err.scope ?? '');
  }
}

export class Authenticator {
  constructor(private readonly verifiers: readonly CredentialVerifier[]) {}

  async authenticate(authorization: string | undefined): Promise<Credential> {
    if (!authorization) {
      throw new AppError(401, 'MISSING_AUTHENTICATION', 'Authentication required: send Authorization: Bearer <credential>', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw unauthorized('MISSING_AUTHENTICATION', 'Authorization header must be "Bearer <credential>"');
    const token = match[1]!;
    const verifier = this.verifiers.find((v) => v.accepts(token));
    if (!verifier) throw unauthorized('INVALID_TOKEN', 'Access token is invalid or expired');
    try {
      const credential = verifier.verify(token);
      // A cached credential answers without a promise: every one costs each request (docs/performance.md).
      return credential instanceof Promise ? await credential : credential;
    } catch (err) {
      throw refusalToHttp(err);
    }
  }
}

export function requireScope(credential: Credential, scope: Scope): void {
  if (credential.scopes.has(scope)) return;
  if (credential.type !== 'api_key') throw scopeInsufficient(`This token's scope does not include ${scope}`, scope);
  throw new AppError(
    403,
    'INSUFFICIENT_PERMISSIONS',
    `This API key's permission (${credential.permission}) does not allow this operation (needs ${scope})`,
  );
}
