/**
 * Checks the requests the service sends to a third party against that party's own published
 * OpenAPI document (vendored under test/fixtures/, README there): Meta's Business Messaging
 * API and Twilio's REST API. The fakes (fake-meta.ts, fake-twilio.ts) run every request they
 * receive through it, so a body, parameter or content type the provider's spec does not allow
 * fails the test instead of passing against our own reading of the documentation.
 *
 * What is checked, per request: that the method and path are an operation of the spec (the
 * path matched against the spec's templates, e.g. `/{Version}/{Phone-Number-ID}/messages` or
 * `/2010-04-01/Accounts/{AccountSid}/Messages.json`); the path parameters' schemas (Graph's
 * `Version` is `^v[0-9]+\.[0-9]+$`); required query parameters and the schemas of those sent;
 * required header parameters (optional headers such as Meta's `User-Agent`, whose pattern
 * describes Meta's own SDK, are not checked); the credentials the operation's security names
 * (HTTP bearer or basic); and the body: its content type among the operation's, JSON or
 * application/x-www-form-urlencoded parsed, and validated with Ajv against the request schema.
 *
 * Several templates can match one URL (`GET /v23.0/{id}` is any Graph node); the request is
 * valid when it is valid for one of them, and the violations reported are those of the closest.
 *
 * Hand-written around Ajv because no maintained library validates a request against an
 * OpenAPI 3.1 document with its discriminators and form bodies for a plain recorded request
 * (express-openapi-validator and openapi-backend route live servers, and do not read 3.1's
 * JSON Schema 2020-12); the JSON Schema work itself is Ajv's.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parse as parseYaml } from 'yaml';

type Json = Record<string, any>;

export interface SpecRequest {
  method: string;
  /** Path and query as sent, e.g. `/v23.0/106540352242922/messages?x=1`. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body ('' when none). */
  raw: string;
}

export interface RequestViolation {
  /** The operation it was checked against (`POST /{Version}/{Phone-Number-ID}/messages`), or the request line when none matched. */
  operation: string;
  /** Where in the request: `path`, `path.Version`, `query.fields`, `header.authorization`, `body`, `body/text/body`. */
  where: string;
  /** The rule broken: an Ajv keyword (`required`, `additionalProperties`, `maxLength`, …) or `operation`, `content-type`, `security`. */
  rule: string;
  message: string;
}

interface Param {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Json;
}

interface Operation {
  id: string;
  method: string;
  template: string;
  pattern: RegExp;
  pathNames: string[];
  literals: number;
  pointer: string;
  params: Param[];
  security: Json[];
  body?: { required: boolean; content: Record<string, Json> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const pointerOf = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
const escape = (s: string) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&');

/**
 * Reads a vendored spec (JSON or YAML). Parsing Meta's 1 MB YAML costs seconds of CPU, so the
 * parsed document is kept as JSON in the OS temporary directory, keyed by the YAML's hash.
 */
export function loadSpec(file: string): Json {
  const text = readFileSync(file, 'utf8');
  if (file.endsWith('.json')) return JSON.parse(text) as Json;
  const dir = path.join(os.tmpdir(), 'openapi-spec-cache');
  const cached = path.join(dir, `${createHash('sha256').update(text).digest('hex')}.json`);
  try {
    return JSON.parse(readFileSync(cached, 'utf8')) as Json;
  } catch {
    const doc = parseYaml(text, { maxAliasCount: -1 }) as Json;
    mkdirSync(dir, { recursive: true });
    // Written aside then renamed: parallel test files never read a half-written cache.
    const tmp = `${cached}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(doc));
    renameSync(tmp, cached);
    return doc;
  }
}

/** Parses an application/x-www-form-urlencoded body; a repeated key becomes an array. */
function parseForm(raw: string): Json {
  const out: Json = {};
  for (const [k, v] of new URLSearchParams(raw)) {
    if (k in out) out[k] = Array.isArray(out[k]) ? [...out[k], v] : [out[k], v];
    else out[k] = v;
  }
  return out;
}

const header = (headers: SpecRequest['headers'], name: string): string | undefined => {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
};

export class OpenApiRequestValidator {
  /** JSON bodies: types as sent. */
  private readonly ajv: Ajv2020;
  /** Parameters and form bodies arrive as strings: Ajv coerces them to the schema's types. */
  private readonly coercing: Ajv2020;
  private readonly operations: Operation[] = [];
  private readonly compiled = new Map<string, ValidateFunction>();
  /** The spec's id inside Ajv: a URI, whatever the display name. */
  private readonly key: string;

  constructor(
    private readonly doc: Json,
    private readonly name: string,
  ) {
    this.key = `urn:spec:${name.replace(/[^A-Za-z0-9._-]+/g, '-')}`;
    closeAllOfBranches(doc);
    const make = (coerce: boolean) => {
      const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, coerceTypes: coerce ? 'array' : false, logger: false });
      addFormats(ajv);
      // Formats the spec names but no standard defines (Twilio's `phone-number`, Meta's `TEXT`): not checked.
      for (const f of this.formatsUsed()) if (!ajv.formats[f]) ajv.addFormat(f, true);
      ajv.addSchema(doc, this.key);
      return ajv;
    };
    this.ajv = make(false);
    this.coercing = make(true);
    const globalSecurity = (doc.security as Json[] | undefined) ?? [];
    for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
      const pathParams: Param[] = (item.parameters ?? []).map((p: Json) => this.deref(p));
      for (const method of METHODS) {
        const op = item[method] as Json | undefined;
        if (!op) continue;
        const own: Param[] = (op.parameters ?? []).map((p: Json) => this.deref(p));
        const params = [...pathParams.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in)), ...own];
        const pathNames = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
        const segments = template.split('/').filter(Boolean);
        const body = op.requestBody ? (this.deref(op.requestBody) as Json) : undefined;
        this.operations.push({
          id: `${method.toUpperCase()} ${template}`,
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${template.split(/\{[^}]+\}/).map(escape).join('([^/]+)')}$`),
          pathNames,
          literals: segments.filter((s) => !s.includes('{')).length,
          pointer: pointerOf('paths', template, method),
          params,
          security: (op.security as Json[] | undefined) ?? globalSecurity,
          ...(body ? { body: { required: body.required === true, content: body.content ?? {} } } : {}),
        });
      }
    }
  }

  /**
   * Compiles the schemas of one operation ahead of its first request. Ajv compiles a schema
   * at its first use, seconds for Meta's message types on a loaded machine; a fake that paid
   * that while the service waited for its answer would turn into a timeout the service retries.
   */
  prepare(method: string, template: string): void {
    const op = this.operations.find((o) => o.method === method.toUpperCase() && o.template === template);
    if (!op) throw new Error(`${method} ${template} is not an operation of ${this.name}`);
    for (const p of op.params) if (p.schema) this.compile(this.coercing, `param:${op.pointer}:${p.in}:${p.name}`, { type: 'object', properties: { v: p.schema } });
    for (const [media, content] of Object.entries(op.body?.content ?? {})) {
      const type = media.toLowerCase();
      if (!content.schema || (type !== 'application/json' && type !== 'application/x-www-form-urlencoded')) continue;
      const ajv = type === 'application/json' ? this.ajv : this.coercing;
      const d = this.deref(content.schema).discriminator as { mapping?: Record<string, string> } | undefined;
      const pointers = d?.mapping ? Object.values(d.mapping).map((ref) => ref.slice(1)) : [pointerOf('paths', op.template, op.method.toLowerCase(), 'requestBody', 'content', media, 'schema')];
      for (const pointer of pointers) this.compile(ajv, `body:${type}:${pointer}`, { $ref: `${this.key}#${pointer.startsWith('/') ? pointer : `/${pointer}`}` });
    }
  }

  /** The violations of one request; empty when it is a valid request of the spec. */
  validate(req: SpecRequest): RequestViolation[] {
    const [pathname = '', query = ''] = req.path.split('?', 2);
    const method = req.method.toUpperCase();
    const candidates = this.operations.filter((o) => o.method === method && o.pattern.test(pathname));
    if (candidates.length === 0) {
      return [{ operation: `${method} ${pathname}`, where: 'path', rule: 'operation', message: `${method} ${pathname} is not an operation of ${this.name}` }];
    }
    // The most specific templates first (most literal segments); valid for any one of them is valid.
    const best = Math.max(...candidates.map((c) => c.literals));
    let closest: RequestViolation[] | undefined;
    for (const op of candidates.filter((c) => c.literals === best)) {
      const found = this.check(op, req, pathname, query);
      if (found.length === 0) return [];
      if (!closest || found.length < closest.length) closest = found;
    }
    return closest!;
  }

  private check(op: Operation, req: SpecRequest, pathname: string, query: string): RequestViolation[] {
    const out: RequestViolation[] = [];
    const add = (where: string, rule: string, message: string) => out.push({ operation: op.id, where, rule, message });
    const values = op.pattern.exec(pathname)!.slice(1);
    const pathValues = new Map(op.pathNames.map((n, i) => [n, decodeURIComponent(values[i] ?? '')]));
    const queryValues = new URLSearchParams(query);
    for (const p of op.params) {
      let value: string | undefined;
      if (p.in === 'path') value = pathValues.get(p.name);
      else if (p.in === 'query') value = queryValues.get(p.name) ?? undefined;
      else if (p.in === 'header') {
        // Optional headers are not checked (see the header comment); required ones are.
        if (!p.required) continue;
        value = header(req.headers, p.name);
      } else continue;
      if (value === undefined) {
        if (p.required) add(`${p.in}.${p.name}`, 'required', `${p.in} parameter ${p.name} is required`);
        continue;
      }
      if (!p.schema) continue;
      const holder = { v: value };
      const validate = this.compile(this.coercing, `param:${op.pointer}:${p.in}:${p.name}`, { type: 'object', properties: { v: p.schema } });
      if (!validate(holder)) for (const e of validate.errors ?? []) add(`${p.in}.${p.name}`, e.keyword, `${p.name} ${e.message} (${JSON.stringify(value)})`);
    }
    this.checkSecurity(op, req, add);
    this.checkBody(op, req, add);
    return out;
  }

  private checkSecurity(op: Operation, req: SpecRequest, add: (where: string, rule: string, message: string) => void) {
    if (op.security.length === 0) return;
    const auth = header(req.headers, 'authorization') ?? '';
    const schemes = (this.doc.components?.securitySchemes ?? {}) as Record<string, Json>;
    // Any one requirement of the list is enough; each names schemes that must all hold.
    const met = op.security.some((requirement) =>
      Object.keys(requirement).every((name) => {
        const s = schemes[name];
        if (s?.type !== 'http') return true;
        return new RegExp(`^${escape(String(s.scheme))}\\s+\\S`, 'i').test(auth);
      }),
    );
    if (!met) add('header.authorization', 'security', `credentials required: ${op.security.map((r) => Object.keys(r).join('+')).join(' or ')}`);
  }

  private checkBody(op: Operation, req: SpecRequest, add: (where: string, rule: string, message: string) => void) {
    if (!req.raw) {
      if (op.body?.required) add('body', 'required', 'the request body is required');
      return;
    }
    if (!op.body) {
      add('body', 'operation', `${op.id} takes no request body`);
      return;
    }
    const type = (header(req.headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const media = Object.keys(op.body.content).find((m) => m.toLowerCase() === type);
    if (!media) {
      add('header.content-type', 'content-type', `content type ${JSON.stringify(type)} is not one of ${Object.keys(op.body.content).join(', ')}`);
      return;
    }
    let body: unknown;
    if (type === 'application/x-www-form-urlencoded') body = parseForm(req.raw);
    else if (type === 'application/json') {
      try {
        body = JSON.parse(req.raw);
      } catch {
        add('body', 'json', 'the body is not valid JSON');
        return;
      }
    } else return;
    let pointer = pointerOf('paths', op.template, op.method.toLowerCase(), 'requestBody', 'content', media, 'schema');
    let schema = op.body.content[media]?.schema as Json | undefined;
    if (!schema) return;
    // A discriminated oneOf (Meta's Message by `type`): the mapped schema alone, so the errors are that type's, not eleven branches'.
    const resolved = this.deref(schema);
    const d = resolved.discriminator as { propertyName?: string; mapping?: Record<string, string> } | undefined;
    const tag = d?.propertyName && body && typeof body === 'object' ? (body as Json)[d.propertyName] : undefined;
    if (d?.propertyName && d.mapping) {
      if (typeof tag !== 'string' || !d.mapping[tag]) {
        add(`body/${d.propertyName}`, 'discriminator', `${d.propertyName} must be one of ${Object.keys(d.mapping).join(', ')} (got ${JSON.stringify(tag)})`);
        return;
      }
      if (d.mapping[tag]!.startsWith('#')) {
        pointer = d.mapping[tag]!.slice(1);
        schema = { $ref: d.mapping[tag] };
      }
    }
    const ajv = type === 'application/x-www-form-urlencoded' ? this.coercing : this.ajv;
    const validate = this.compile(ajv, `body:${type}:${pointer}`, { $ref: `${this.key}#${pointer.startsWith('/') ? pointer : `/${pointer}`}` });
    if (!validate(body)) {
      for (const e of validate.errors ?? []) add(`body${e.instancePath}`, e.keyword, describe(e));
    }
  }

  private compile(ajv: Ajv2020, key: string, schema: Json): ValidateFunction {
    const k = `${ajv === this.ajv ? 'j' : 'c'}:${key}`;
    let v = this.compiled.get(k);
    if (!v) {
      // Inline parameter schemas may hold local refs (`#/components/...`): resolved against the spec.
      v = ajv.compile(rebase(schema, this.key));
      this.compiled.set(k, v);
    }
    return v;
  }

  private deref(o: Json): Json {
    let cur = o;
    for (let i = 0; i < 10 && typeof cur?.$ref === 'string' && cur.$ref.startsWith('#/'); i++) {
      cur = cur.$ref
        .slice(2)
        .split('/')
        .map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce((acc: Json, k: string) => acc?.[k], this.doc);
    }
    return cur;
  }

  private formatsUsed(): string[] {
    const found = new Set<string>();
    JSON.stringify(this.doc, (k, v) => {
      if (k === 'format' && typeof v === 'string') found.add(v);
      return v;
    });
    return [...found];
  }
}

/**
 * Meta's schemas close each `allOf` branch on its own (`allOf: [{$ref: BaseMessageProperties},
 * {additionalProperties: false, properties: {text}}]`), which in JSON Schema rejects the base's
 * own properties: every documented example would fail, `messaging_product` included. What the
 * authors mean is a schema closed over all its branches, which is JSON Schema 2020-12's
 * `unevaluatedProperties: false` on the `allOf` itself: rewritten so, once, on load. The spec's
 * own request examples validate after it (test/unit/openapi-request-validator.test.ts).
 */
function closeAllOfBranches(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) closeAllOfBranches(n);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Json;
  if (Array.isArray(o.allOf)) {
    let closed = false;
    for (const branch of o.allOf as Json[]) {
      if (branch && typeof branch === 'object' && branch.additionalProperties === false) {
        delete branch.additionalProperties;
        closed = true;
      }
    }
    if (closed && o.unevaluatedProperties === undefined) o.unevaluatedProperties = false;
  }
  for (const [k, v] of Object.entries(o)) if (k !== 'examples' && k !== 'example') closeAllOfBranches(v);
}

/** `#/components/...` refs inside a schema built here point into the spec added under `name`. */
function rebase(schema: Json, name: string): Json {
  return JSON.parse(JSON.stringify(schema), (k, v) => (k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `${name}${v}` : v));
}

function describe(e: ErrorObject): string {
  const at = e.instancePath || '(the body)';
  if (e.keyword === 'unevaluatedProperties') return `${at} has a property the spec does not allow: ${JSON.stringify((e.params as { unevaluatedProperty: string }).unevaluatedProperty)}`;
  if (e.keyword === 'additionalProperties') return `${at} has a property the spec does not allow: ${JSON.stringify((e.params as { additionalProperty: string }).additionalProperty)}`;
  if (e.keyword === 'required') return `${at} lacks the required ${JSON.stringify((e.params as { missingProperty: string }).missingProperty)}`;
  if (e.keyword === 'enum') return `${at} ${e.message}: ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
  return `${at} ${e.message}`;
}

const cache = new Map<string, OpenApiRequestValidator>();

/** One validator per spec file and test process (compiling Meta's schemas is not free). */
export function requestValidatorFor(file: string, name = path.basename(file)): OpenApiRequestValidator {
  let v = cache.get(file);
  if (!v) {
    v = new OpenApiRequestValidator(loadSpec(file), name);
    cache.set(file, v);
  }
  return v;
}

export const FIXTURES = path.join(__dirname, '..', 'fixtures');
/** Meta's Business Messaging (WhatsApp) OpenAPI, test/fixtures/meta-openapi/README.md. */
export const META_OPENAPI = path.join(FIXTURES, 'meta-openapi', 'business-messaging-api_v23.0.yaml');
/** Twilio's REST API 2010-04-01 OpenAPI, test/fixtures/twilio-openapi/README.md. */
export const TWILIO_OPENAPI = path.join(FIXTURES, 'twilio-openapi', 'twilio_api_v2010.json');
