/**
 * OAuth test helpers: a cookie-keeping HTTP "browser" without JavaScript that submits the
 * sign-in and consent forms exactly as a person's browser would (it reads the CSRF token
 * from the page), and factories for users and clients through the real API.
 */
import { randomUUID } from 'node:crypto';
import { bearer, type TestApp } from './app';

export interface Page {
  status: number;
  url: string;
  html: string;
  location?: string;
}

export class FormBrowser {
  private readonly cookies = new Map<string, string>();
  /** Sent with every request (a proxy's X-Forwarded-For, say). */
  headers: Record<string, string> = {};

  constructor(private readonly origin: string) {}

  private remember(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*expires=/i.test(a) && new Date(a.split('=')[1]!).getTime() < Date.now()) || attrs.some((a) => /^\s*max-age=0/i.test(a));
      if (!value || expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private async request(url: string, init: RequestInit = {}): Promise<Page> {
    const absolute = new URL(url, this.origin).href;
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(absolute, { ...init, redirect: 'manual', headers: { ...this.headers, ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) } });
    this.remember(res);
    const location = res.headers.get('location') ?? undefined;
    return { status: res.status, url: absolute, html: await res.text(), ...(location ? { location: new URL(location, absolute).href } : {}) };
  }

  /** GETs `url` and follows redirects within the service; stops at the first page or at a redirect elsewhere. */
  async open(url: string): Promise<Page> {
    let page = await this.request(url);
    while (page.location && page.location.startsWith(this.origin)) page = await this.request(page.location);
    return page;
  }

  /** Submits the page's form whose action ends with `action`, with its hidden fields plus `fields`, and follows redirects. */
  async submit(page: Page, action: string, fields: Record<string, string> = {}): Promise<Page> {
    const forms = [...page.html.matchAll(/<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/g)];
    const form = forms.find((f) => f[1]!.endsWith(action));
    if (!form) throw new Error(`no form posting to …${action} on ${page.url} (status ${page.status}): ${page.html.slice(0, 300)}`);
    const body = new URLSearchParams();
    for (const [, name, value] of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) body.set(name!, value!);
    for (const [k, v] of Object.entries(fields)) body.set(k, v);
    let result = await this.request(form[1]!, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
    while (result.location && result.location.startsWith(this.origin)) result = await this.request(result.location);
    return result;
  }
}

/**
 * Opens an authorization URL in a fresh form browser, signs in as `user` and confirms (or
 * aborts) the consent; returns the redirect back to the client (with `code` or `error`).
 */
export async function signInAndConsent(origin: string, url: string, user: { email: string; password: string }, decision: 'confirm' | 'abort' = 'confirm'): Promise<URL> {
  const browser = new FormBrowser(origin);
  const signIn = await browser.open(url);
  if (signIn.status !== 200) throw new Error(`sign-in page: ${signIn.status} ${signIn.url} ${signIn.html}`);
  let page = await browser.submit(signIn, '/login', { email: user.email, password: user.password });
  if (page.status === 200) {
    if (!page.html.includes('Approve')) throw new Error(`no consent page: ${page.html.slice(0, 300)}`);
    page = await browser.submit(page, `/${decision}`);
  }
  if (!page.location) throw new Error(`no redirect back to the client: ${page.status} ${page.html.slice(0, 300)}`);
  return new URL(page.location);
}

export async function createUser(t: TestApp, adminKey: string, role: 'read' | 'read_write' | 'admin', password = 'correct horse battery staple') {
  const email = `${role}-${randomUUID().slice(0, 8)}@example.com`;
  const res = await t.request.post('/v1/users').set(bearer(adminKey)).send({ email, password, role });
  if (res.status !== 201) throw new Error(`user not created: ${JSON.stringify(res.body)}`);
  return { id: res.body.data.id as string, email, password };
}

export async function createClient(t: TestApp, adminKey: string, body: { type: 'confidential' | 'public'; scopes: string[]; redirect_uris?: string[] }) {
  const res = await t.request
    .post('/v1/oauth-clients')
    .set(bearer(adminKey))
    .send({ name: `Client ${randomUUID().slice(0, 6)}`, redirect_uris: ['https://client.example/callback'], ...body });
  if (res.status !== 201) throw new Error(`client not created: ${JSON.stringify(res.body)}`);
  return res.body.data as { client_id: string; client_secret: string | null; name: string; redirect_uris: string[] };
}
