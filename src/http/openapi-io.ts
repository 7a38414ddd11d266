/**
 * Owns the split of the OpenAPI document's schemas into what a client sends and what it
 * receives, as zod's input and output types differ: a field with a server default
 * (`.default()`) is optional in a request and always present in a response.
 *
 * zod-to-openapi writes one component per named zod schema, in input mode (a defaulted
 * field is not `required`). This pass, on the generated document:
 * - a component reached from responses (and from the `webhooks` we send) is made output
 *   mode: every property with a `default` becomes `required`;
 * - a component reached from both requests and responses is copied, in input mode, as
 *   `<Name>Input`, and the requests refer to the copies. Components used only by requests
 *   keep their name and input mode.
 * So generated clients (clients/typescript) need not send what the API defaults, and can
 * rely on reading it back.
 */

type Json = Record<string, unknown>;
const PREFIX = '#/components/schemas/';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Names of the component schemas reachable from `node`, transitively. */
function reachable(node: unknown, schemas: Record<string, Json>, into = new Set<string>()): Set<string> {
  if (Array.isArray(node)) {
    for (const item of node) reachable(item, schemas, into);
  } else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith(PREFIX)) {
        const name = value.slice(PREFIX.length);
        if (!into.has(name) && schemas[name]) {
          into.add(name);
          reachable(schemas[name], schemas, into);
        }
      } else {
        reachable(value, schemas, into);
      }
    }
  }
  return into;
}

/** A deep copy with references to the `renamed` components (`$ref`, discriminator mappings) pointing at their new names. */
function withRefsRenamed<T>(node: T, renamed: Map<string, string>): T {
  if (Array.isArray(node)) return node.map((item) => withRefsRenamed(item, renamed)) as T;
  if (typeof node === 'string' && node.startsWith(PREFIX)) {
    const to = renamed.get(node.slice(PREFIX.length));
    return (to ? PREFIX + to : node) as T;
  }
  if (node && typeof node === 'object') {
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, withRefsRenamed(value, renamed)])) as T;
  }
  return node;
}

/** Whether a schema has an object property with a `default`, outside the components it refers to. */
function hasDefaulted(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(hasDefaulted);
  if (!node || typeof node !== 'object') return false;
  const properties = (node as Json).properties as Record<string, unknown> | undefined;
  if (properties && Object.values(properties).some((p) => p !== null && typeof p === 'object' && 'default' in p)) return true;
  return Object.values(node).some(hasDefaulted);
}

/** Output mode, in place: every object property with a `default` is `required` (the response always carries it). */
function requireDefaulted(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) requireDefaulted(item);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const schema = node as Json;
  const properties = schema.properties as Record<string, Json> | undefined;
  if (properties && typeof properties === 'object') {
    const defaulted = Object.entries(properties).filter(([, p]) => p && typeof p === 'object' && 'default' in p).map(([name]) => name);
    const required = new Set([...((schema.required as string[] | undefined) ?? []), ...defaulted]);
    if (required.size > 0) schema.required = [...required];
  }
  for (const value of Object.values(schema)) requireDefaulted(value);
}

type Operation = { requestBody?: unknown; parameters?: unknown; responses?: unknown };

export function splitInputOutputSchemas<D extends Json>(doc: D): D {
  const components = doc.components as { schemas?: Record<string, Json> } | undefined;
  const schemas = components?.schemas;
  if (!schemas) return doc;
  const operations: Operation[] = [];
  for (const item of Object.values((doc.paths ?? {}) as Record<string, Record<string, Operation>>)) {
    for (const method of METHODS) if (item[method]) operations.push(item[method]);
  }
  const requestSide = reachable(operations.map((op) => [op.requestBody, op.parameters]), schemas);
  // The webhooks' request bodies are what we send: output, like a response.
  const responseSide = reachable([operations.map((op) => op.responses), doc.webhooks], schemas);

  // Split only what differs between the modes: a shared component with a defaulted field,
  // or one that refers to such a component (until nothing changes).
  const renamed = new Map<string, string>();
  const shared = [...requestSide].filter((name) => responseSide.has(name));
  for (let grew = true; grew; ) {
    grew = false;
    for (const name of shared) {
      if (renamed.has(name)) continue;
      const refs = reachable(schemas[name], schemas);
      if (hasDefaulted(schemas[name]) || [...refs].some((ref) => renamed.has(ref))) {
        renamed.set(name, `${name}Input`);
        grew = true;
      }
    }
  }
  for (const [name, inputName] of renamed) {
    if (schemas[inputName]) throw new Error(`OpenAPI: ${inputName} already exists; cannot split ${name} into input and output`);
    schemas[inputName] = withRefsRenamed(schemas[name]!, renamed);
  }
  for (const name of requestSide) if (!responseSide.has(name)) schemas[name] = withRefsRenamed(schemas[name]!, renamed);
  for (const op of operations) {
    if (op.requestBody) op.requestBody = withRefsRenamed(op.requestBody, renamed);
    if (op.parameters) op.parameters = withRefsRenamed(op.parameters, renamed);
    requireDefaulted(op.responses);
  }
  for (const name of responseSide) requireDefaulted(schemas[name]);
  requireDefaulted(doc.webhooks);
  return doc;
}
