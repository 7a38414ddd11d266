/**
 * An OAuth 2.0 client registered by an organization's admin. Confidential clients
 * authenticate at the token endpoint with a secret (shown once, stored as a SHA-256 hash);
 * public clients (apps that cannot keep a secret) must use PKCE S256 instead.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import type { Scope } from '../../credentials/scopes';

export const CLIENT_TYPES = ['confidential', 'public'] as const;
export type ClientType = (typeof CLIENT_TYPES)[number];

export class OAuthClient {
  [OptionalProps]?: 'createdAt' | 'updatedAt' | 'secretHash';
  id!: string;
  organizationId!: string;
  name!: string;
  type!: ClientType;
  redirectUris!: string[];
  scopes!: Scope[];
  secretHash: string | null = null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

export const OAuthClientSchema = new EntitySchema<OAuthClient>({
  class: OAuthClient,
  tableName: 'oauth_clients',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    name: { type: 'string' },
    type: { type: 'string' },
    redirectUris: { type: 'json', fieldName: 'redirect_uris' },
    scopes: { type: 'json' },
    secretHash: { type: 'string', fieldName: 'secret_hash', nullable: true, hidden: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
  },
});
