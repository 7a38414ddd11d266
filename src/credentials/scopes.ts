/**
 * Owns what a credential may do: the OAuth-style scopes, their words, and the spec's
 * permission levels (API keys, users' roles) as scope sets. Imports nothing: the HTTP
 * layer, the OpenAPI document and every credential module read it.
 */

export const SCOPES = [
  'workflows:read',
  'workflows:write',
  'workflows:delete',
  'triggers:read',
  'triggers:write',
  'triggers:delete',
  'webhooks:read',
  'webhooks:write',
  'webhooks:delete',
  'analytics:read',
  'analytics:write',
  'admin',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Each scope in plain words: the consent page and the OpenAPI oauth2 scheme show these. */
export const SCOPE_WORDS: Record<Scope, string> = {
  'workflows:read': 'See your workflows, executions, customers and knowledge bases',
  'workflows:write': 'Create and change workflows, and send messages',
  'workflows:delete': 'Delete workflows',
  'triggers:read': 'See your triggers',
  'triggers:write': 'Create, change and fire triggers',
  'triggers:delete': 'Delete triggers',
  'webhooks:read': 'See your webhooks and their delivery logs',
  'webhooks:write': 'Create and change webhooks',
  'webhooks:delete': 'Delete webhooks',
  'analytics:read': 'See analytics',
  'analytics:write': 'Create reports and exports',
  admin: 'Manage API keys, users and applications (full administrator access)',
};

/** An API key's level, and a user's role. */
export const PERMISSIONS = ['read', 'read_write', 'admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** The spec's permission levels as scope sets: read < read_write (no delete) < admin. */
export const PERMISSION_SCOPES: Record<Permission, ReadonlySet<Scope>> = {
  read: new Set(SCOPES.filter((s) => s.endsWith(':read'))),
  read_write: new Set(SCOPES.filter((s) => s.endsWith(':read') || s.endsWith(':write'))),
  admin: new Set(SCOPES),
};
