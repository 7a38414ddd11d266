/**
 * A channel connection: how one organization's messages reach a channel (a WhatsApp Cloud
 * API number, an Instagram account, or a generic HTTP provider). `config` holds what may be
 * shown; `secrets` holds every secret sealed (src/secrets.ts), never in clear.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';

/** `unauthorized`: the provider refused the stored token (Graph code 190 or a 401); a new token makes it active again. */
export const CHANNEL_CONNECTION_STATUSES = ['active', 'disabled', 'unauthorized'] as const;
export type ChannelConnectionStatus = (typeof CHANNEL_CONNECTION_STATUSES)[number];

/** The names of the sealed secrets; which ones a connection has depends on its type. */
export type ChannelSecretName = 'access_token' | 'app_secret' | 'secret' | 'verify_token' | 'auth_token';

export class ChannelConnection {
  [OptionalProps]?: 'status' | 'createdAt' | 'updatedAt' | 'deletedAt';
  id!: string;
  organizationId!: string;
  /** A key of the provider registry (providers/index.ts), which the entity does not import: providers use this entity. */
  type!: string;
  /** The conversation channel it serves: `whatsapp`, `instagram`, or the http config's. */
  channel!: string;
  name!: string;
  status: ChannelConnectionStatus = 'active';
  config!: Record<string, string>;
  /** Sealed values by secret name. */
  secrets!: Partial<Record<ChannelSecretName, string>>;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
  deletedAt: Date | null = null;
}

export const ChannelConnectionSchema = new EntitySchema<ChannelConnection>({
  class: ChannelConnection,
  tableName: 'channel_connections',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    type: { type: 'string' },
    channel: { type: 'string' },
    name: { type: 'string' },
    status: { type: 'string' },
    config: { type: 'json' },
    secrets: { type: 'json' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at', onUpdate: () => new Date() },
    deletedAt: { type: 'Date', fieldName: 'deleted_at', nullable: true },
  },
});
