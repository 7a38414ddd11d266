/**
 * What the channel hook receivers share at the HTTP edge (the one channel route's form
 * branch and the voice middleware): the id a hook path carries, a provider's form body, and
 * the connection an earlier hook layer already read for the request.
 */
import type { Context } from 'koa';
import { koaBody } from 'koa-body';
import { AppError } from '../../http/errors';
import type { ChannelConnection } from './channel.entity';

/** A connection id as the hook paths carry it; anything else is a 404 without a query. */
export const HOOK_ID_PATTERN = /^chn_[A-Za-z0-9]{1,60}$/;

/** A provider's form fields are small (Twilio's parameters): far below the JSON bound. */
const MAX_FORM_BYTES = 64 * 1024;
const parseForm = koaBody({ json: false, urlencoded: true, multipart: false, text: false, formLimit: MAX_FORM_BYTES, includeUnparsed: true });

/**
 * A provider's form-encoded hook body: the exact text (what Twilio's signature covers) and
 * its fields flat, as received (a repeated name keeps its last value: Twilio never repeats
 * one). NUL characters are refused, as the input guard refuses them in JSON.
 */
export async function readHookForm(ctx: Context): Promise<{ rawBody: string; fields: Record<string, string> }> {
  await parseForm(ctx, async () => undefined);
  // koa-body 8 with includeUnparsed keeps the exact text received at `ctx.request.rawBody`.
  const raw = (ctx.request as { rawBody?: unknown }).rawBody;
  const rawBody = typeof raw === 'string' ? raw : '';
  const fields = Object.fromEntries(new URLSearchParams(rawBody));
  if (Object.values(fields).some((v) => v.includes('\u0000'))) throw new AppError(400, 'INVALID_REQUEST', 'NUL characters are not accepted');
  return { rawBody, fields };
}

/**
 * The connection an earlier hook layer already read for this request (the voice middleware
 * reads it to see whether the POST is a call's), so the form branch does not read it again.
 */
const HOOKED_CONNECTION = Symbol('hooked connection');
export const passConnection = (ctx: Context, c: ChannelConnection): void => void ((ctx.state as Record<symbol, unknown>)[HOOKED_CONNECTION] = c);
export const passedConnection = (ctx: Context, id: string): ChannelConnection | undefined => {
  const c = (ctx.state as Record<symbol, unknown>)[HOOKED_CONNECTION] as ChannelConnection | undefined;
  return c?.id === id ? c : undefined;
};
