/**
 * Checks served responses against the OpenAPI document, both ways: a response whose
 * status, body or header the document does not describe is a problem, and so is a
 * documented operation that no request exercised. Bodies are validated with Ajv (JSON
 * Schema 2020-12, the dialect of OpenAPI 3.1) against the document's own schemas.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Json = Record<string, unknown>;
interface HeaderObject {
  required?: boolean;
  schema?: Json;
  $ref?: string;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, { schema?: Json }>;
}
interface Operation {
  operationId: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  template: string;
  /** False for operations with `security: []` (no credentials). */
  secured: boolean;
  hasBody: boolean;
  pattern: RegExp;
  responses: Record<string, ResponseObject>;
}

export interface ServedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body text ('' when none). */
  text: string;
}

/** Headers that HTTP itself adds; every other header served must be documented. */
const TRANSPORT_HEADERS = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'vary']);
const METHODS = ['get', 'put', 'post', 'delete'];
const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export class OpenApiContract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();
  readonly exercised = new Map<string, Set<number>>();

  constructor(private readonly doc: Json) {
    addFormats(this.ajv);
    this.ajv.addSchema(doc, 'openapi.json');
    for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const regex = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
        this.operations.push({
          operationId: op.operationId as string,
          method: method.toUpperCase() as Operation['method'],
          template,
          secured: !(Array.isArray(op.security) && op.security.length === 0),
          hasBody: op.requestBody !== undefined,
          pattern: new RegExp(`^${regex}$`),
          responses: op.responses as Record<string, ResponseObject>,
        });
      }
    }
    // Literal segments win over parameters (`/v1/x/new` before `/v1/x/{id}`).
    this.operations.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  }

  list(): ReadonlyArray<Pick<Operation, 'operationId' | 'method' | 'template' | 'secured' | 'hasBody'>> {
    return this.operations;
  }

  /** Operations of the document that no checked request reached. */
  unexercised(): string[] {
    return this.operations.filter((o) => !this.exercised.has(o.operationId)).map((o) => `${o.operationId} (${o.method} ${o.template})`);
  }

  /** Operations no request got a success (2xx or 3xx) from: their success bodies were never validated. */
  withoutSuccess(): string[] {
    return this.operations
      .filter((o) => ![...(this.exercised.get(o.operationId) ?? [])].some((status) => status < 400))
      .map((o) => `${o.operationId} (${o.method} ${o.template})`);
  }

  /** Returns the problems of one served response (empty when it matches the document). */
  check(method: string, path: string, res: ServedResponse): string[] {
    const pathname = path.split('?')[0] ?? path;
    const op = this.operations.find((o) => o.method === method.toUpperCase() && o.pattern.test(pathname));
    if (!op) return [`${method} ${pathname}: no operation in the document`];
    const where = `${op.operationId} (${method} ${pathname}) → ${res.status}`;
    const statuses = this.exercised.get(op.operationId) ?? new Set<number>();
    statuses.add(res.status);
    this.exercised.set(op.operationId, statuses);

    const documented = op.responses[String(res.status)] ?? op.responses[`${String(res.status)[0]}XX`];
    if (!documented) return [`${where}: status not documented (documented: ${Object.keys(op.responses).join(', ')})`];
    const responseKey = op.responses[String(res.status)] ? String(res.status) : `${String(res.status)[0]}XX`;
    return [...this.checkHeaders(where, documented, res), ...this.checkBody(where, op, responseKey, documented, res)];
  }

  private resolveHeader(h: HeaderObject): HeaderObject {
    if (!h.$ref) return h;
    const name = h.$ref.replace('#/components/headers/', '');
    return ((this.doc.components as Json).headers as Record<string, HeaderObject>)[name] ?? {};
  }

  private checkHeaders(where: string, documented: ResponseObject, res: ServedResponse): string[] {
    const problems: string[] = [];
    const declared = new Map(Object.entries(documented.headers ?? {}).map(([name, h]) => [name.toLowerCase(), this.resolveHeader(h)]));
    for (const [name, header] of declared) {
      const value = res.headers[name];
      if (value === undefined) {
        if (header.required) problems.push(`${where}: required header ${name} missing`);
        continue;
      }
      const schema = header.schema ?? {};
      // A repeated header (Set-Cookie) arrives as an array: each occurrence must match.
      for (const one of Array.isArray(value) ? value : [value]) {
        const typed = schema.type === 'integer' && /^-?\d+$/.test(one) ? Number(one) : one;
        if (!this.ajv.validate(schema, typed)) problems.push(`${where}: header ${name}: ${one} ${this.ajv.errorsText()}`);
      }
    }
    for (const name of Object.keys(res.headers)) {
      if (!TRANSPORT_HEADERS.has(name) && !declared.has(name)) problems.push(`${where}: header ${name} served but not documented`);
    }
    return problems;
  }

  private checkBody(where: string, op: Operation, responseKey: string, documented: ResponseObject, res: ServedResponse): string[] {
    const served = String(res.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
    const content = documented.content ?? {};
    if (Object.keys(content).length === 0) return res.text === '' ? [] : [`${where}: a body was served but none is documented`];
    if (!content[served]) return [`${where}: content type "${served}" not documented (documented: ${Object.keys(content).join(', ')})`];
    const ref = `openapi.json#/${pointer('paths', op.template, op.method.toLowerCase(), 'responses', responseKey, 'content', served, 'schema')}`;
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: ref });
      this.validators.set(ref, validate);
    }
    const body: unknown = served === 'application/json' ? JSON.parse(res.text) : res.text;
    if (validate(body)) return [];
    return [`${where}: body does not match the document: ${this.ajv.errorsText(validate.errors)}; body: ${res.text.slice(0, 500)}`];
  }
}
