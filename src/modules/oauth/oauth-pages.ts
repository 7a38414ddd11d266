/**
 * Owns the server-rendered pages of the authorization server: sign-in, consent and error.
 * Plain HTML forms (no JavaScript), a hidden CSRF token in every form, labels on every
 * field, visible focus rings, large touch targets, and a layout that reads on a phone.
 */
import { type Scope, SCOPE_WORDS } from '../../http/auth';


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
button{min-height:2.75rem;padding:.6rem 1.2rem;font-size:1rem;font-weight:600;border-radius:.5rem;border:2px solid #1d4ed8;cursor:pointer}
.primary{background:#1d4ed8;color:#fff}.secondary{background:#fff;color:#1d4ed8}
input:focus-visible,button:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
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

const alert = (message?: string) => (message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : '');

export function renderSignInPage(p: { uid: string; csrf: string; clientName: string; organizationName: string; email?: string; error?: string }): string {
  return layout(
    `Sign in – ${p.clientName}`,
    `<h1>Sign in</h1>
<p><strong>${escapeHtml(p.clientName)}</strong> wants to access <strong>${escapeHtml(p.organizationName)}</strong>. Sign in to continue.</p>
${alert(p.error)}
<form method="post" action="/oauth/interaction/${escapeHtml(p.uid)}/login">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required autofocus value="${escapeHtml(p.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
<form method="post" action="/oauth/interaction/${escapeHtml(p.uid)}/abort">
<input type="hidden" name="csrf" value="${escapeHtml(p.csrf)}">
<div class="actions"><button class="secondary" type="submit">Cancel</button></div>
</form>`,
  );
}

export function renderConsentPage(p: { uid: string; csrf: string; clientName: string; email: string; scopes: Scope[] }): string {
  const items = p.scopes.map((s) => `<li>${escapeHtml(SCOPE_WORDS[s])} <span class="muted">(${escapeHtml(s)})</span></li>`).join('');
  return layout(
    `Allow ${p.clientName}?`,
    `<h1>Allow ${escapeHtml(p.clientName)}?</h1>
<p>Signed in as <strong>${escapeHtml(p.email)}</strong>.</p>
<p><strong>${escapeHtml(p.clientName)}</strong> is asking to:</p>
<ul>${items}</ul>
<p class="muted">You can revoke this access later.</p>
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
