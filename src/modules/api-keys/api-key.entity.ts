/** An API key: only its SHA-256 hash is stored; the key itself is shown once at creation. */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import type { Permission } from '../../credentials/scopes';

export class ApiKey {
  [OptionalProps]?: 'createdAt' | 'lastUsedAt' | 'revokedAt';
  id!: string;
  organizationId!: string;
  name!: string;
  permission!: Permission;
  keyHash!: string;
  /** First characters of the key (`wfa_` + 4), enough to recognise it in a list. */
  prefix!: string;
  lastFour!: string;
  createdAt: Date = new Date();
  lastUsedAt: Date | null = null;
  revokedAt: Date | null = null;
}

export const ApiKeySchema = new EntitySchema<ApiKey>({
  class: ApiKey,
  tableName: 'api_keys',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    name: { type: 'string' },
    permission: { type: 'string' },
    keyHash: { type: 'string', fieldName: 'key_hash', unique: true },
    prefix: { type: 'string' },
    lastFour: { type: 'string', fieldName: 'last_four' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    lastUsedAt: { type: 'Date', fieldName: 'last_used_at', nullable: true },
    revokedAt: { type: 'Date', fieldName: 'revoked_at', nullable: true },
  },
});
