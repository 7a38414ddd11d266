/**
 * Owns OAuth clients of an organization: register (secret generated for confidential
 * clients, shown once, stored as a SHA-256 hash), list, get, rotate the secret, delete
 * (which revokes every grant, code and token issued to the client).
 */
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Scope } from '../../credentials/scopes';
import { conflict, notFound } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { newId } from '../../ids';
import type { Orm } from '../../db/orm';
import { revokeOAuthModels } from './oauth-adapter';
import { type ClientType, OAuthClient } from './oauth-client.entity';
import { hashClientSecret } from './oauth-provider';

const clientNotFound = () => notFound('OAUTH_CLIENT_NOT_FOUND', 'OAuth client');

const generateClientSecret = () => randomBytes(32).toString('base64url');

export class OAuthClientService {
  constructor(
    private readonly em: EntityManager,
    private readonly orm: Orm,
  ) {}

  async create(organizationId: string, input: { name: string; type: ClientType; redirect_uris: string[]; scopes: Scope[] }) {
    const secret = input.type === 'confidential' ? generateClientSecret() : null;
    const client = this.em.create(OAuthClient, {
      id: newId('oauthClient'),
      organizationId,
      name: input.name,
      type: input.type,
      redirectUris: [...new Set(input.redirect_uris)],
      scopes: input.scopes,
      secretHash: secret ? hashClientSecret(secret) : null,
    });
    await this.em.flush();
    return { client, secret };
  }

  async list(organizationId: string, page: Page) {
    const [items, total] = await this.em.findAndCount(
      OAuthClient,
      { organizationId },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: offsetOf(page) },
    );
    return { items, total };
  }

  async get(organizationId: string, id: string): Promise<OAuthClient> {
    const client = await this.em.findOne(OAuthClient, { id, organizationId });
    if (!client) throw clientNotFound();
    return client;
  }

  /** The old secret stops working at once; tokens already issued stay valid. */
  async rotateSecret(organizationId: string, id: string) {
    const client = await this.get(organizationId, id);
    if (client.type !== 'confidential') throw conflict('OAUTH_CLIENT_PUBLIC', 'A public client has no secret to rotate');
    const secret = generateClientSecret();
    client.secretHash = hashClientSecret(secret);
    client.updatedAt = new Date();
    await this.em.flush();
    return { client, secret };
  }

  async delete(organizationId: string, id: string): Promise<OAuthClient> {
    const client = await this.get(organizationId, id);
    await this.em.remove(client).flush();
    await revokeOAuthModels(this.orm, { clientId: client.id });
    return client;
  }
}
