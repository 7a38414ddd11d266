/** An organization: the tenant every credential and resource belongs to. */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';

export class Organization {
  [OptionalProps]?: 'createdAt';
  id!: string;
  name!: string;
  createdAt: Date = new Date();
}

export const OrganizationSchema = new EntitySchema<Organization>({
  class: Organization,
  tableName: 'organizations',
  properties: {
    id: { type: 'string', primary: true },
    name: { type: 'string', unique: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
  },
});
