/** In / Update / Out shapes of `/v1/channels`. Secrets go in and never come out (except the verify token, once). */
import { paginationQuery } from '../../http/pagination';
import { z } from '../../http/zod';
import { Channel } from '../workflows/workflow.schemas';
import { TwilioVoiceConfig, TwilioVoiceConfigUpdate } from './providers/twilio_voice/voice.schemas';
import { CHANNEL_CONNECTION_STATUSES, CHANNEL_CONNECTION_TYPES } from './channel.entity';

const Name = z.string().trim().min(1).max(200);
/** Meta's ids are numeric strings; bounded so that they sit safely in a URL path. */
const GraphId = (what: string) =>
  z.string().trim().regex(/^\d{1,64}$/, `${what} must be Meta's numeric id`).openapi({ example: '106540352242922' });
const Secret = (description: string) => z.string().min(1).max(4096).openapi({ description: `${description} Write-only: never returned.` });

const WhatsAppCloudConfig = z.strictObject({
  phone_number_id: GraphId('phone_number_id'),
  access_token: Secret('A system-user access token with whatsapp_business_messaging.'),
  app_secret: Secret("The Meta app's secret: X-Hub-Signature-256 of every hook is checked with it."),
});
const InstagramConfig = z.strictObject({
  instagram_account_id: GraphId('instagram_account_id'),
  access_token: Secret('A token with instagram_manage_messages.'),
  app_secret: Secret("The Meta app's secret: X-Hub-Signature-256 of every hook is checked with it."),
});
const HttpConfig = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).max(2048).openapi({ description: 'Where outbound messages are POSTed (the generic adapter)' }),
  channel: Channel,
  secret: Secret('Sent as a Bearer token with each POST.').optional(),
});

export const ChannelConnectionIn = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('whatsapp_cloud'), name: Name, config: WhatsAppCloudConfig }),
    z.strictObject({ type: z.literal('instagram'), name: Name, config: InstagramConfig }),
    z.strictObject({ type: z.literal('http'), name: Name, config: HttpConfig }),
    z.strictObject({ type: z.literal('twilio_voice'), name: Name, config: TwilioVoiceConfig }),
  ])
  .openapi('ChannelConnectionCreate');
export type ChannelConnectionIn = z.output<typeof ChannelConnectionIn>;

/** Any of the type's config fields; a secret is replaced only when sent. Fields of another type are refused. */
export const ChannelConnectionUpdate = z
  .strictObject({
    name: Name.optional(),
    status: z.enum(['active', 'disabled']).optional().openapi({ description: '`active` again after `disabled` or `unauthorized`' }),
    config: z
      .strictObject({
        phone_number_id: GraphId('phone_number_id').optional(),
        instagram_account_id: GraphId('instagram_account_id').optional(),
        url: HttpConfig.shape.url.optional(),
        channel: Channel.optional(),
        access_token: Secret('').optional(),
        app_secret: Secret('').optional(),
        secret: Secret('').optional(),
        ...TwilioVoiceConfigUpdate.shape,
      })
      .optional(),
  })
  .openapi('ChannelConnectionUpdate');
export type ChannelConnectionUpdate = z.output<typeof ChannelConnectionUpdate>;

export const ChannelConnectionOut = z
  .object({
    id: z.string().openapi({ example: 'chn_4f9Qk2R7sT1uVwXyZ0aB' }),
    type: z.enum(CHANNEL_CONNECTION_TYPES),
    channel: Channel,
    name: z.string(),
    status: z.enum(CHANNEL_CONNECTION_STATUSES),
    config: z
      .record(z.string(), z.string())
      .openapi({ description: 'The non-secret fields only: phone_number_id, instagram_account_id, url and channel, or account_sid and phone_number' }),
    webhook_url: z
      .string()
      .nullable()
      .openapi({ description: "The callback URL to paste into Meta's console, or into the Twilio number's voice webhooks (null for http connections)", example: 'https://api.example.com/hooks/channels/chn_4f9Qk2R7sT1uVwXyZ0aB' }),
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
