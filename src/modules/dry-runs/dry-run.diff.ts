/**
 * Owns the comparison of a recorded execution with its dry run. Both runs are read as a
 * list of node visits (the node's step and the messages it sent, in the order the nodes
 * ran) and paired by position: nodes never repeat (the graph has no cycles), so position i
 * is "the i-th node the conversation reached". A node that sent messages but has no step
 * (a form still waiting) is the last visit of its run.
 */

export interface StepView {
  type: string;
  status: string;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  error: { type: string | null; message: string | null } | null;
}

/** A run as recorded: steps in the order they ran, outbound messages in the order they were sent. */
export interface RunRecord {
  steps: Array<StepView & { node_id: string }>;
  messages: Array<{ node_id: string; text: string }>;
}

export interface NodeVisit {
  node_id: string;
  step: StepView | null;
  messages: string[];
}

export interface NodeDiff {
  index: number;
  original: NodeVisit | null;
  dry_run: NodeVisit | null;
  /** What differs: `node_id`, `visit` (one side never got there), `step` (one side has none), `step.<path>`, `messages`. Empty = same. */
  changes: string[];
}

export interface RunDiff {
  identical: boolean;
  /** The first node whose visit differs, or null when the runs are the same. */
  first_divergence: { index: number; node_id: string; changes: string[] } | null;
  nodes: NodeDiff[];
}

export function visitsOf(run: RunRecord): NodeVisit[] {
  const visits = new Map<string, NodeVisit>();
  const visit = (nodeId: string) => {
    let v = visits.get(nodeId);
    if (!v) visits.set(nodeId, (v = { node_id: nodeId, step: null, messages: [] }));
    return v;
  };
  for (const { node_id, ...step } of run.steps) visit(node_id).step = step;
  for (const m of run.messages) visit(m.node_id).messages.push(m.text);
  return [...visits.values()];
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Dotted paths of the leaves that differ; arrays compare whole. */
export function changedPaths(a: unknown, b: unknown, path: string): string[] {
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => changedPaths(a[k], b[k], `${path}.${k}`));
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [path];
}

function compare(o: NodeVisit | null, d: NodeVisit | null): string[] {
  if (!o || !d) return ['visit'];
  if (o.node_id !== d.node_id) return ['node_id'];
  const changes = o.step && d.step ? changedPaths(o.step, d.step, 'step') : o.step || d.step ? ['step'] : [];
  if (JSON.stringify(o.messages) !== JSON.stringify(d.messages)) changes.push('messages');
  return changes;
}

export function diffRuns(original: RunRecord, dryRun: RunRecord): RunDiff {
  const a = visitsOf(original);
  const b = visitsOf(dryRun);
  const nodes: NodeDiff[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const o = a[i] ?? null;
    const d = b[i] ?? null;
    nodes.push({ index: i, original: o, dry_run: d, changes: compare(o, d) });
  }
  const first = nodes.find((n) => n.changes.length > 0);
  return {
    identical: first === undefined,
    first_divergence: first ? { index: first.index, node_id: (first.dry_run ?? first.original)!.node_id, changes: first.changes } : null,
    nodes,
  };
}
