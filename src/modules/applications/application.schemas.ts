/** In / Update / Out shapes of `/v1/applications`. */
import { SCOPES } from '../../credentials/scopes';
import { z } from '../../http/zod';

/** The asymmetric algorithms a JWT may be signed with; `none` and every HS* are refused. */
export const JWT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;

/** A public JWK: RSA, EC or OKP, with a `kid` so that tokens select it and keys can rotate. */
const PublicJwk = z
  .looseObject({
    kty: z.enum(['RSA', 'EC', 'OKP']),
    kid: z.string().min(1).max(200),
    alg: z.enum(JWT_ALGORITHMS).optional(),
    use: z.literal('sig').optional(),
  })
  .openapi({ description: 'A public JWK (RSA, EC P-256 or OKP Ed25519) with a kid; private members are refused' });

export const Jwks = z
  .strictObject({ keys: z.array(PublicJwk).min(1).max(20) })
  .openapi('JsonWebKeySet', { description: 'Public keys; the JWT header `kid` selects one' });

const ScopeList = z.array(z.enum(SCOPES)).min(1).max(SCOPES.length);

const RequireJti = z.boolean().openapi({
  description: 'Replay protection: every token must carry a `jti`, accepted once. Off: a token is a bearer credential, valid for every request until its `exp`',
});

export const ApplicationIn = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    scopes: ScopeList.openapi({ description: 'The most a token of this application may claim' }),
    jwks: Jwks.optional(),
    jwks_uri: z.string().max(2048).optional().openapi({ description: 'HTTPS URL of the JWK set; fetched with the webhook address rules and cached 10 min' }),
    require_jti: RequireJti.default(false),
  })
  .openapi('ApplicationCreate', { description: 'Exactly one of `jwks` and `jwks_uri`' });

export const ApplicationUpdate = z
  .strictObject({
    name: z.string().trim().min(1).max(200).optional(),
    scopes: ScopeList.optional(),
    jwks: Jwks.optional(),
    jwks_uri: z.string().max(2048).optional(),
    require_jti: RequireJti.optional(),
  })
  .openapi('ApplicationUpdate', { description: 'Replace the key source (one of `jwks`, `jwks_uri`) to rotate keys' });

export const ApplicationOut = z
  .object({
    id: z.string().openapi({ description: 'The `iss` of this application’s tokens', example: 'app_4f9Qk2R7sT1uVwXyZ0aB' }),
    name: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    jwks: Jwks.nullable(),
    jwks_uri: z.string().nullable(),
    audience: z.string().openapi({ description: 'The `aud` every token must carry' }),
    require_jti: RequireJti,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('Application');

export const ApplicationIdParams = z.object({ application_id: z.string().max(64) });

export type ApplicationIn = z.output<typeof ApplicationIn>;
export type ApplicationUpdate = z.output<typeof ApplicationUpdate>;
