/**
 * A JWT application: a backend of one organization that calls the API with JWTs it signs
 * itself. Its id is the tokens' `iss`; its public keys are an inline JWK set or a
 * `jwks_uri` (exactly one of them); `scopes` caps what its tokens may claim; with
 * `requireJti` each token must carry a `jti` and is accepted once.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import type { JSONWebKeySet } from 'jose';
import type { Scope } from '../../credentials/scopes';

export class Application {
  [OptionalProps]?: 'createdAt' | 'updatedAt' | 'jwks' | 'jwksUri' | 'requireJti';
  id!: string;
  organizationId!: string;
  name!: string;
  scopes!: Scope[];
  jwks: JSONWebKeySet | null = null;
  jwksUri: string | null = null;
  requireJti = false;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

export const ApplicationSchema = new EntitySchema<Application>({
  class: Application,
  tableName: 'applications',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    name: { type: 'string' },
    scopes: { type: 'json' },
    jwks: { type: 'json', nullable: true },
    jwksUri: { type: 'string', fieldName: 'jwks_uri', nullable: true },
    requireJti: { type: 'boolean', fieldName: 'require_jti' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at', onUpdate: () => new Date() },
  },
});
