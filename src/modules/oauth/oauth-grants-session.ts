/**
 * Owns the session of the connected-applications page (`/oauth/grants`, oauth-account.ts):
 * a cookie holding the user id, a random session id and an expiry (1 h), signed with HMAC
 * under the server's cookie key; HttpOnly, SameSite=Lax, scoped to /oauth/grants, Secure
 * when the service is served over HTTPS. It carries a fingerprint of the password hash, so
 * changing the password ends every session; a deleted user is signed out.
 *
 * Signing in on the consent pages (oauth-interactions.ts) opens this session too, so the
 * consent page's "your connected applications" link needs no second sign-in.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import type { OAuthServices } from './oauth-state';
import { User } from '../users/user.entity';

export const GRANTS_PATH = '/oauth/grants';
const SESSION_COOKIE = 'wfa_grants_session';
export const SESSION_TTL_S = 3600;

export interface GrantsSession {
  /** User id. */
  u: string;
  /** Session id: what the forms' CSRF tokens are bound to. */
  s: string;
  /** Expiry, Unix seconds. */
  e: number;
  /** Fingerprint of the password hash: a new password ends the session. */
  p: string;
}

export class GrantsSessions {
  private readonly secure: boolean;

  constructor(
    private readonly services: OAuthServices,
    private readonly key: Buffer | string,
  ) {
    this.secure = services.config.BASE_URL.startsWith('https:');
  }

  mac(purpose: string, value: string): string {
    return createHmac('sha256', this.key).update(`${purpose}:${value}`).digest('base64url');
  }

  sameMac(given: string, expected: string): boolean {
    const a = Buffer.from(given);
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private passwordPrint(user: User): string {
    return this.mac('grants-password', user.passwordHash).slice(0, 16);
  }

  /** Set by hand: Koa's cookies refuse a Secure cookie on a plain connection (TLS ended at a proxy). */
  setCookie(ctx: Context, name: string, value: string, maxAgeS: number): void {
    ctx.append('Set-Cookie', `${name}=${value}; Path=${GRANTS_PATH}; Max-Age=${maxAgeS}; HttpOnly; SameSite=Lax${this.secure ? '; Secure' : ''}`);
  }

  /** Opens a session for `user` (a new session id, so new CSRF tokens). */
  open(ctx: Context, user: User): void {
    const session: GrantsSession = { u: user.id, s: randomBytes(16).toString('base64url'), e: Math.floor(Date.now() / 1000) + SESSION_TTL_S, p: this.passwordPrint(user) };
    const value = Buffer.from(JSON.stringify(session)).toString('base64url');
    this.setCookie(ctx, SESSION_COOKIE, `${value}.${this.mac('grants-session', value)}`, SESSION_TTL_S);
  }

  close(ctx: Context): void {
    this.setCookie(ctx, SESSION_COOKIE, '', 0);
  }

  private read(ctx: Context): GrantsSession | null {
    const raw = ctx.cookies.get(SESSION_COOKIE);
    if (!raw) return null;
    const [body, sig] = raw.split('.');
    if (!body || !sig || !this.sameMac(sig, this.mac('grants-session', body))) return null;
    try {
      const session = JSON.parse(Buffer.from(body, 'base64url').toString()) as GrantsSession;
      return session.e * 1000 > Date.now() ? session : null;
    } catch {
      return null;
    }
  }

  /** The signed-in person, unless the cookie is missing, forged, expired, or older than their password. */
  async signedIn(ctx: Context): Promise<{ user: User; session: GrantsSession } | null> {
    const session = this.read(ctx);
    if (!session) return null;
    const user = await this.services.orm.em.fork().findOne(User, { id: session.u });
    return user && this.sameMac(session.p, this.passwordPrint(user)) ? { user, session } : null;
  }
}
