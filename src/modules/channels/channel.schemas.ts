/** In / Update / Out shapes of `/v1/channels`. Secrets go in and never come out (except the verify token, once). */
import { paginationQuery } from '../../http/pagination';
import { z } from '../../http/zod';
import { Channel } from '../workflows/workflow.schemas';
import { CHANNEL_CONNECTION_STATUSES } from './channel.entity';
import { CHANNEL_CONNECTION_TYPES, type ChannelConnectionType, providerOf } from './providers';
import { secretField } from './providers/config-fields';

const Name = z.string().trim().min(1).max(200);

/** One branch per connection type, its config from the type's provider (providers/<type>/provider.ts). */
const [firstType, ...otherTypes] = CHANNEL_CONNECTION_TYPES.map((type) => z.strictObject({ type: z.literal(type), name: Name, config: providerOf(type).config }));
export const ChannelConnectionIn = z.discriminatedUnion('type', [firstType!, ...otherTypes]).openapi('ChannelConnectionCreate');
export interface ChannelConnectionIn {
  type: ChannelConnectionType;
  name: string;
  config: Record<string, unknown>;
}

/**
 * Every provider's config fields, each optional. A field several providers share (a Meta
 * token) keeps a description of its own kind; which fields a connection takes is checked
 * against its type's provider (channel.service.ts).
 */
function configUpdateShape(): Record<string, z.ZodType> {
  const owners = new Map<string, z.ZodType[]>();
  for (const type of CHANNEL_CONNECTION_TYPES) {
    for (const [name, field] of Object.entries(providerOf(type).config.shape)) owners.set(name, [...(owners.get(name) ?? []), field as z.ZodType]);
  }
  const secrets = new Set(CHANNEL_CONNECTION_TYPES.flatMap((type) => providerOf(type).fields.secret as string[]));
  return Object.fromEntries(
    [...owners].map(([name, fields]) => [name, (fields.length > 1 && secrets.has(name) ? secretField('') : fields[0]!).optional()]),
  );
}

/** Any of the type's config fields; a secret is replaced only when sent. Fields of another type are refused. */
export const ChannelConnectionUpdate = z
  .strictObject({
    name: Name.optional(),
    status: z.enum(['active', 'disabled']).optional().openapi({ description: '`active` again after `disabled` or `unauthorized`' }),
    config: z.strictObject(configUpdateShape()).optional(),
  })
  .openapi('ChannelConnectionUpdate');
export interface ChannelConnectionUpdate {
  name?: string | undefined;
  status?: 'active' | 'disabled' | undefined;
  config?: Record<string, unknown> | undefined;
}

export const ChannelConnectionOut = z
  .object({
    id: z.string().openapi({ example: 'chn_4f9Qk2R7sT1uVwXyZ0aB' }),
    type: z.enum(CHANNEL_CONNECTION_TYPES),
    channel: Channel,
    name: z.string(),
    status: z.enum(CHANNEL_CONNECTION_STATUSES),
    config: z
      .record(z.string(), z.string())
      .openapi({ description: 'The non-secret fields only: phone_number_id, instagram_account_id, page_id, url and channel, or account_sid, phone_number (and channel, messaging_service_sid: twilio_messaging)' }),
    webhook_url: z
      .string()
      .nullable()
      .openapi({ description: "The callback URL to paste into Meta's console, or into the Twilio number's voice or messaging webhooks (null for http connections)", example: 'https://api.example.com/hooks/channels/chn_4f9Qk2R7sT1uVwXyZ0aB' }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('ChannelConnection');

export const ChannelConnectionWithTokenOut = ChannelConnectionOut.extend({
  verify_token: z.string().openapi({ description: "The Verify token to paste into Meta's console. Shown only in this answer; rotate it to see a new one." }),
}).openapi('ChannelConnectionWithVerifyToken');

export const ChannelIdParams = z.strictObject({ channel_id: z.string().max(100) });
export const ChannelListQuery = z.strictObject({
  ...paginationQuery,
  type: z.enum(CHANNEL_CONNECTION_TYPES).optional(),
  channel: Channel.optional(),
  status: z.enum(CHANNEL_CONNECTION_STATUSES).optional(),
});

export const ChannelTestOut = z
  .object({
    ok: z.boolean(),
    status_code: z.number().int().openapi({ description: "The provider's HTTP status; 0 when it did not answer" }),
    error_message: z.string().nullable(),
  })
  .openapi('ChannelConnectionTest');
