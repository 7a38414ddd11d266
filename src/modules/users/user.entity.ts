/**
 * A person of an organization who signs in to consent to OAuth clients. The role maps onto
 * scopes exactly like an API key's permission; the password is kept only as a scrypt hash.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import type { Permission } from '../../credentials/scopes';

export type Role = Permission;

export class User {
  [OptionalProps]?: 'createdAt' | 'updatedAt';
  id!: string;
  organizationId!: string;
  /** Stored lower-cased: emails compare case-insensitively. */
  email!: string;
  passwordHash!: string;
  role!: Role;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

export const UserSchema = new EntitySchema<User>({
  class: User,
  tableName: 'users',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    email: { type: 'string' },
    passwordHash: { type: 'string', fieldName: 'password_hash', hidden: true },
    role: { type: 'string' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
  },
});
