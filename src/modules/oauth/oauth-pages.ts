/**
 * Owns the server-rendered pages of the authorization server: sign-in, consent, error, and
 * the signed-in person's connected applications (their grants).
 * Plain HTML forms (no JavaScript), a hidden CSRF token in every form, labels on every
 * field, visible focus rings (5:1 against white), large touch targets, and a layout that
 * reads on a phone. After a failed sign-in the focus lands in the password field and the
 * error is tied to the fields it is about (aria-describedby, aria-invalid); revoking an
 * application is a red, destructive action behind a confirmation page.
 */
import { type Scope, SCOPE_WORDS } from '../../credentials/scopes';


const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f3f4f6;color:#111827}
main{max-width:28rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:.75rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
@media (max-width:30rem){main{margin:0;min-height:100vh;border-radius:0;box-shadow:none}}
h1{font-size:1.4rem;margin:0 0 .75rem}
p{margin:.5rem 0}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input{width:100%;padding:.7rem .75rem;font-size:1rem;border:1px solid #6b7280;border-radius:.5rem}
button,.button{display:inline-block;min-height:2.75rem;padding:.6rem 1.2rem;font-size:1rem;font-weight:600;line-height:1.5;border-radius:.5rem;border:2px solid #1d4ed8;cursor:pointer;text-decoration:none}
.primary{background:#1d4ed8;color:#fff}.secondary{background:#fff;color:#1d4ed8}
.danger{background:#b91c1c;border-color:#b91c1c;color:#fff}.danger-outline{background:#fff;border-color:#b91c1c;color:#b91c1c}
input:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid #b45309;outline-offset:2px}
input[aria-invalid=true]{border-color:#b91c1c}
a{color:#1d4ed8}
.link{min-height:2.75rem;padding:0;border:0;background:none;color:#1d4ed8;text-decoration:underline;font-weight:400}
.hint{color:#4b5563;font-size:.9rem;margin:.25rem 0 0}
.grant{border-top:1px solid #e5e7eb;padding:1rem 0}.grant h2{font-size:1.1rem;margin:0 0 .25rem}
.notice{background:#ecfdf5;color:#065f46;border:1px solid #6ee7b7;border-radius:.5rem;padding:.6rem .75rem}
.actions{display:flex;gap:.75rem;flex-wrap:wrap;margin-top:1.5rem}.actions form{margin:0}
ul{padding-left:1.25rem}li{margin:.35rem 0}
.error{background:#fef2f2;color:#991b1b;border:1px solid #fca5a5;border-radius:.5rem;padding:.6rem .75rem}
.muted{color:#4b5563;font-size:.9rem}`;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}

const ERROR_ID = 'form-error';
const alert = (message?: string) => (message ? `<p class="error" role="alert" id="${ERROR_ID}">${escapeHtml(message)}</p>` : '');

/** The attributes of a field a sign-in error is about: described by the error, marked invalid. */
const errorAttrs = (error: string | undefined, hint?: string) => {
  const describedBy = [hint, error ? ERROR_ID : undefined].filter(Boolean).join(' ');
  return `${describedBy ? ` aria-describedby="${describedBy}"` : ''}${error ? ' aria-invalid="true"' : ''}`;
};

/** The email field takes the focus on a fresh form; after an error, the password field does (the email is kept). */
const focusOn = (field: 'email' | 'password', error: string | undefined) => ((field === 'password') === Boolean(error) ? ' autofocus' : '');

export function renderSignInPage(p: { uid: string; csrf: string; clientName: string; organizationName: string; email?: string; error?: string }): string {
  return layout(
    `Sign in – ${p.clientName}`,
    `<h1>Sign in</h1>
<p><strong>${escapeHtml(p.clientName)}</strong> wants to access <strong>${escapeHtml(p.organizationName)}</strong>. Sign in to continue.</p>
${alert(p.error)}
<form method="post" action="/oauth/interaction/${escapeHtml(p.uid)}/login">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required${focusOn('email', p.error)}${errorAttrs(p.error)} value="${escapeHtml(p.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${focusOn('password', p.error)}${errorAttrs(p.error)}>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
<form method="post" action="/oauth/interaction/${escapeHtml(p.uid)}/abort">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<div class="actions"><button class="secondary" type="submit">Cancel</button></div>
</form>`,
  );
}

/** Where a person lists and revokes the applications they approved (oauth-account.ts). */
export const grantsPageUrl = (organizationName: string) => `/oauth/grants?organization=${encodeURIComponent(organizationName)}`;

export function renderConsentPage(p: {
  uid: string;
  csrf: string;
  clientName: string;
  email: string;
  organizationName: string;
  scopes: Scope[];
}): string {
  const items = p.scopes.map((s) => `<li>${escapeHtml(SCOPE_WORDS[s])} <span class="muted">(${escapeHtml(s)})</span></li>`).join('');
  return layout(
    `Allow ${p.clientName}?`,
    `<h1>Allow ${escapeHtml(p.clientName)}?</h1>
<p>Signed in to <strong>${escapeHtml(p.organizationName)}</strong> as <strong>${escapeHtml(p.email)}</strong>.</p>
<form method="post" action="/oauth/interaction/${escapeHtml(p.uid)}/switch">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<button class="link" type="submit">Not you? Use another account</button>
</form>
<p><strong>${escapeHtml(p.clientName)}</strong> is asking to access <strong>${escapeHtml(p.organizationName)}</strong> and to:</p>
<ul>${items}</ul>
<p class="muted">You can revoke this access later on <a href="${escapeHtml(grantsPageUrl(p.organizationName))}" target="_blank" rel="noopener">your connected applications</a> page (opens in a new tab).</p>
<div class="actions">
<form method="post" action="/oauth/interaction/${escapeHtml(p.uid)}/confirm">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<button class="primary" type="submit">Approve</button>
</form>
<form method="post" action="/oauth/interaction/${escapeHtml(p.uid)}/abort">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<button class="secondary" type="submit">Deny</button>
</form>
</div>`,
  );
}

export function renderErrorPage(error: string, description?: string): string {
  return layout('Something went wrong', `<h1>Something went wrong</h1>${alert(description ?? error)}<p class="muted">Error: ${escapeHtml(error)}</p>`);
}

export function renderAccountSignInPage(p: { csrf: string; organizationName?: string; email?: string; error?: string }): string {
  return layout(
    'Sign in – connected applications',
    `<h1>Connected applications</h1>
<p>Sign in to see the applications you allowed to access your organization, and to revoke their access.</p>
${alert(p.error)}
<form method="post" action="/oauth/grants/sign-in">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<label for="organization">Organization</label>
<input id="organization" name="organization" type="text" autocomplete="organization" required${p.organizationName || p.error ? '' : ' autofocus'}${errorAttrs(p.error, 'organization-hint')} value="${escapeHtml(p.organizationName ?? '')}">
<p class="hint" id="organization-hint">Your organization's name, as your applications show it on their sign-in page. Capitals and spaces around it do not matter.</p>
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required${p.organizationName && !p.error ? ' autofocus' : ''}${errorAttrs(p.error)} value="${escapeHtml(p.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${focusOn('password', p.error)}${errorAttrs(p.error)}>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>`,
  );
}

const dateOf = (d: Date) => d.toISOString().slice(0, 10);
const scopeList = (scopes: Scope[]) => `<ul>${scopes.map((s) => `<li>${escapeHtml(SCOPE_WORDS[s])} <span class="muted">(${escapeHtml(s)})</span></li>`).join('')}</ul>`;

/** The confirmation step of revoking: what the application loses, a red button that revokes, and a way back. */
export function renderRevokePage(p: { csrf: string; grant: { clientId: string; clientName: string; scopes: Scope[] } }): string {
  const name = escapeHtml(p.grant.clientName);
  return layout(
    `Revoke access for ${p.grant.clientName}?`,
    `<h1>Revoke access for ${name}?</h1>
<p><strong>${name}</strong> will no longer be able to:</p>
${scopeList(p.grant.scopes)}
<p>Its access stops within a second. To use it again, you will have to approve it again.</p>
<div class="actions">
<form method="post" action="/oauth/grants/revoke">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<input type="hidden" name="client_id" value="${escapeHtml(p.grant.clientId)}">
<button class="danger" type="submit">Revoke access</button>
</form>
<a class="button secondary" href="/oauth/grants">Keep access</a>
</div>`,
  );
}

export function renderGrantsPage(p: {
  csrf: string;
  email: string;
  grants: Array<{ clientId: string; clientName: string; scopes: Scope[]; grantedAt: Date }>;
  notice?: string;
}): string {
  const hidden = `<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">`;
  const grants = p.grants
    .map(
      (g) => `<section class="grant" aria-label="${escapeHtml(g.clientName)}">
<h2>${escapeHtml(g.clientName)}</h2>
<p class="muted">Allowed on ${dateOf(g.grantedAt)}. It can:</p>
${scopeList(g.scopes)}
<form method="get" action="/oauth/grants/revoke">
<input type="hidden" name="client_id" value="${escapeHtml(g.clientId)}">
<button class="danger-outline" type="submit" aria-label="Revoke access for ${escapeHtml(g.clientName)}">Revoke access…</button>
</form>
</section>`,
    )
    .join('\n');
  return layout(
    'Connected applications',
    `<h1>Connected applications</h1>
<p>Signed in as <strong>${escapeHtml(p.email)}</strong>.</p>
${p.notice ? `<p class="notice" role="status">${escapeHtml(p.notice)}</p>` : ''}
${grants || '<p>You have not allowed any application to access your organization.</p>'}
<form method="post" action="/oauth/grants/sign-out">
${hidden}
<div class="actions"><button class="secondary" type="submit">Sign out</button></div>
</form>`,
  );
}
