/**
 * Owns channel connections: create, list, get, update, soft delete, verify-token rotation
 * and the provider test, scoped to the caller's organization. Secrets are sealed here on the
 * way in (src/secrets.ts) and opened only by `openSecret`, for the hook receiver and the
 * outbound adapters: no answer, list or log carries one.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';
import { flushOrConflict } from '../../db/flush';
import { conflict, invalid } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { z } from '../../http/zod';
import { newId, randomBase62 } from '../../ids';
import { keyringOf, sealedAt } from '../../secrets';
import { ChannelConnection, type ChannelSecretName } from './channel.entity';
import { providerOf } from './providers';
import { channelNotFound, openSecretOf } from './channel-lookup';
import type { ChannelConnectionIn, ChannelConnectionUpdate } from './channel.schemas';

export { channelNotFound } from './channel-lookup';
const nameTaken = () => conflict('CHANNEL_ALREADY_EXISTS', 'A channel connection with this name already exists', 'name');


const newVerifyToken = () => randomBase62(32);

export type ChannelTestResult = { ok: boolean; status_code: number; error_message: string | null };

export class ChannelService {
  constructor(
    private readonly em: EntityManager,
    private readonly config: Config,
  ) {}

  private get box() {
    return keyringOf(this.config);
  }

  /** Splits a config into the shown fields and the sealed secrets of the type. */
  private split(id: string, type: string, config: Record<string, unknown>) {
    const shown: Record<string, string> = {};
    const sealed: Partial<Record<ChannelSecretName, string>> = {};
    for (const [k, v] of Object.entries(config)) {
      if (v === undefined) continue;
      if (providerOf(type).fields.shown.includes(k)) shown[k] = String(v);
      else if ((providerOf(type).fields.secret as string[]).includes(k)) sealed[k as ChannelSecretName] = this.box.seal(String(v), sealedAt.channelSecret(id, k));
      else throw invalid(`config.${k} is not a field of ${type} connections`, `config.${k}`);
    }
    return { shown, sealed };
  }

  async create(organizationId: string, input: ChannelConnectionIn): Promise<{ connection: ChannelConnection; verifyToken: string }> {
    const id = newId('channelConnection');
    const { shown, sealed } = this.split(id, input.type, input.config);
    const verifyToken = newVerifyToken();
    const channel = providerOf(input.type).channel ?? String(input.config.channel);
    const connection = this.em.create(ChannelConnection, {
      id,
      organizationId,
      type: input.type,
      channel,
      name: input.name,
      config: shown,
      secrets: { ...sealed, verify_token: this.box.seal(verifyToken, sealedAt.channelSecret(id, 'verify_token')) },
    });
    await flushOrConflict(this.em, nameTaken);
    return { connection, verifyToken };
  }

  async list(organizationId: string, filter: { type?: string | undefined; channel?: string | undefined; status?: string | undefined }, page: Page) {
    const where: Record<string, unknown> = { organizationId, deletedAt: null };
    for (const [k, v] of Object.entries(filter)) if (v !== undefined) where[k] = v;
    const [items, total] = await this.em.findAndCount(ChannelConnection, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.limit,
      offset: offsetOf(page),
    });
    return { items, total };
  }

  async get(organizationId: string, id: string): Promise<ChannelConnection> {
    const c = await this.em.findOne(ChannelConnection, { id, organizationId, deletedAt: null });
    if (!c) throw channelNotFound();
    return c;
  }

  async update(organizationId: string, id: string, input: ChannelConnectionUpdate): Promise<ChannelConnection> {
    const c = await this.get(organizationId, id);
    if (input.name !== undefined) c.name = input.name;
    if (input.config) {
      const { shown, sealed } = this.split(c.id, c.type, input.config);
      // A field several types share (`channel`, `phone_number`) takes this type's values only.
      const own = providerOf(c.type).config.shape;
      for (const [k, v] of Object.entries(input.config)) {
        const checked = v === undefined || !own[k] ? undefined : z.safeParse(own[k], v);
        if (checked && !checked.success) throw invalid(checked.error.issues[0]?.message ?? `config.${k} is not valid for ${c.type} connections`, `config.${k}`);
      }
      c.config = { ...c.config, ...shown };
      if (shown.channel) c.channel = shown.channel;
      c.secrets = { ...c.secrets, ...sealed };
      // A new token is the answer to `unauthorized`.
      if ((sealed.access_token || sealed.auth_token) && c.status === 'unauthorized') c.status = 'active';
    }
    if (input.status !== undefined) c.status = input.status;
    await flushOrConflict(this.em, nameTaken);
    return c;
  }

  async remove(organizationId: string, id: string): Promise<void> {
    const c = await this.get(organizationId, id);
    c.deletedAt = new Date();
    await this.em.flush();
  }

  async rotateVerifyToken(organizationId: string, id: string): Promise<{ connection: ChannelConnection; verifyToken: string }> {
    const c = await this.get(organizationId, id);
    const verifyToken = newVerifyToken();
    c.secrets = { ...c.secrets, verify_token: this.box.seal(verifyToken, sealedAt.channelSecret(c.id, 'verify_token')) };
    await this.em.flush();
    return { connection: c, verifyToken };
  }

  openSecret(c: ChannelConnection, name: ChannelSecretName): string | undefined {
    return openSecretOf(this.config, c, name);
  }

  /** Calls the provider with the stored credentials and sets `status` from the answer (a disabled connection stays disabled). */
  async test(organizationId: string, id: string): Promise<ChannelTestResult> {
    const c = await this.get(organizationId, id);
    const result = await this.probe(c);
    if (c.status !== 'disabled') {
      const status = result.ok ? 'active' : result.status_code === 401 || result.unauthorized ? 'unauthorized' : c.status;
      if (status !== c.status) {
        c.status = status;
        await this.em.flush();
      }
    }
    return { ok: result.ok, status_code: result.status_code, error_message: result.error_message };
  }

  /** The provider's own check of the stored credentials (providers/<type>/provider.ts `test`). */
  private async probe(c: ChannelConnection) {
    return await providerOf(c.type).test({ connection: c, config: this.config, secret: (name) => this.openSecret(c, name) });
  }
}
