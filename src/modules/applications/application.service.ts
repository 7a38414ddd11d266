/**
 * Owns JWT applications: create, list, get, update (key rotation) and delete, scoped to
 * the caller's organization. Registered keys are checked here (public, parseable, unique
 * `kid`s) and a `jwks_uri` passes the webhook address rules, so what the verifier later
 * trusts was validated once at the edge.
 */
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { JSONWebKeySet } from 'jose';
import { flushOrConflict } from '../../db/flush';
import { conflict, invalid, notFound } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { newId } from '../../ids';
import { checkUrlSyntax } from '../webhooks/webhook-target';
import { Application } from './application.entity';
import type { ApplicationIn, ApplicationUpdate } from './application.schemas';

const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

const applicationNotFound = () => notFound('APPLICATION_NOT_FOUND', 'Application');
const nameTaken = () => conflict('APPLICATION_ALREADY_EXISTS', 'An application with this name already exists', 'name');

/** Every key must be a public key node:crypto can import, with a kid of its own. */
function checkJwks(jwks: JSONWebKeySet): JSONWebKeySet {
  const kids = new Set<string>();
  jwks.keys.forEach((key, i) => {
    const field = `jwks.keys[${i}]`;
    if (PRIVATE_JWK_MEMBERS.some((m) => m in key)) throw invalid('jwks must hold public keys only (private key members found)', field, 'INVALID_JWKS');
    if (kids.has(key.kid!)) throw invalid(`kid ${key.kid} appears twice`, `${field}.kid`, 'INVALID_JWKS');
    kids.add(key.kid!);
    try {
      createPublicKey({ key: key as JsonWebKey, format: 'jwk' });
    } catch (err) {
      throw invalid(`not a valid public key (${(err as Error).message})`, field, 'INVALID_JWKS');
    }
  });
  return jwks;
}

/** HTTPS only and never a forbidden literal address; DNS is checked at fetch time, on the dialled address. */
function checkJwksUri(raw: string, allowPrivate: boolean): string {
  const checked = checkUrlSyntax(raw, allowPrivate);
  if (!('url' in checked)) throw invalid(checked.message.replace(/^url/, 'jwks_uri'), 'jwks_uri', 'INVALID_JWKS_URI');
  return checked.url.href;
}

function keySource(input: { jwks?: JSONWebKeySet | undefined; jwks_uri?: string | undefined }, allowPrivate: boolean) {
  if ((input.jwks === undefined) === (input.jwks_uri === undefined)) {
    throw invalid('Give exactly one of jwks and jwks_uri', input.jwks === undefined ? 'jwks' : 'jwks_uri', 'MISSING_REQUIRED_FIELD');
  }
  return input.jwks !== undefined
    ? { jwks: checkJwks(input.jwks), jwksUri: null }
    : { jwks: null, jwksUri: checkJwksUri(input.jwks_uri!, allowPrivate) };
}

export class ApplicationService {
  constructor(
    private readonly em: EntityManager,
    private readonly allowPrivateNetworks: boolean,
  ) {}

  async create(organizationId: string, input: ApplicationIn): Promise<Application> {
    const app = this.em.create(Application, {
      id: newId('application'),
      organizationId,
      name: input.name,
      scopes: input.scopes,
      requireJti: input.require_jti,
      ...keySource(input, this.allowPrivateNetworks),
    });
    await flushOrConflict(this.em, nameTaken);
    return app;
  }

  async list(organizationId: string, page: Page) {
    const [items, total] = await this.em.findAndCount(
      Application,
      { organizationId },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: offsetOf(page) },
    );
    return { items, total };
  }

  async get(organizationId: string, id: string): Promise<Application> {
    const app = await this.em.findOne(Application, { id, organizationId });
    if (!app) throw applicationNotFound();
    return app;
  }

  async update(organizationId: string, id: string, input: ApplicationUpdate): Promise<Application> {
    const app = await this.get(organizationId, id);
    if (input.name !== undefined) app.name = input.name;
    if (input.scopes !== undefined) app.scopes = input.scopes;
    if (input.require_jti !== undefined) app.requireJti = input.require_jti;
    if (input.jwks !== undefined || input.jwks_uri !== undefined) Object.assign(app, keySource(input, this.allowPrivateNetworks));
    app.updatedAt = new Date();
    await flushOrConflict(this.em, nameTaken);
    return app;
  }

  async delete(organizationId: string, id: string): Promise<Application> {
    const app = await this.get(organizationId, id);
    await this.em.remove(app).flush();
    return app;
  }
}
