/**
 * Owns organizations' API keys: `wfa_` + 32 random bytes in base62, stored only as a
 * SHA-256 hash, shown once. Also creates organizations for the bootstrap CLI.
 */
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { API_KEY_PREFIX, hashApiKey } from '../../credentials/api-key-hash';
import type { Permission } from '../../credentials/scopes';
import { notFound } from '../../errors';
import { type Page, offsetOf } from '../../http/pagination';
import { newId } from '../../ids';
import { Organization } from '../organizations/organization.entity';
import { ApiKey } from './api-key.entity';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** 32 random bytes as one base62 number (43 characters, left-padded). */
export function generateApiKey(): string {
  let n = BigInt(`0x${randomBytes(32).toString('hex')}`);
  let digits = '';
  while (n > 0n) {
    digits = BASE62[Number(n % 62n)]! + digits;
    n /= 62n;
  }
  return API_KEY_PREFIX + digits.padStart(43, '0');
}

export class ApiKeyService {
  constructor(private readonly em: EntityManager) {}

  async ensureOrganization(name: string): Promise<Organization> {
    await this.em
      .getConnection()
      .execute('insert into organizations (id, name) values (?, ?) on conflict (name) do nothing', [newId('organization'), name]);
    return this.em.findOneOrFail(Organization, { name });
  }

  async create(organizationId: string, name: string, permission: Permission): Promise<{ apiKey: ApiKey; key: string }> {
    const key = generateApiKey();
    const apiKey = this.em.create(ApiKey, {
      id: newId('apiKey'),
      organizationId,
      name,
      permission,
      keyHash: hashApiKey(key),
      prefix: key.slice(0, API_KEY_PREFIX.length + 4),
      lastFour: key.slice(-4),
    });
    await this.em.flush();
    return { apiKey, key };
  }

  async list(organizationId: string, page: Page) {
    const [items, total] = await this.em.findAndCount(
      ApiKey,
      { organizationId, revokedAt: null },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: offsetOf(page) },
    );
    return { items, total };
  }

  async get(organizationId: string, id: string): Promise<ApiKey> {
    const key = await this.em.findOne(ApiKey, { id, organizationId, revokedAt: null });
    if (!key) throw notFound('API_KEY_NOT_FOUND', 'API key');
    return key;
  }

  async revoke(organizationId: string, id: string): Promise<ApiKey> {
    const key = await this.get(organizationId, id);
    key.revokedAt = new Date();
    await this.em.flush();
    return key;
  }
}
