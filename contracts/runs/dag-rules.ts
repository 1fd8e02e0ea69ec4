/**
 * The rules of a DAG workflow (the spec's Workflow and Node state tables), pure: which pending
 * nodes start, which are skipped, and when the workflow is over. The DAG workflow applies them
 * after every change of a node's state; the API's graph validation and the unit tests read them
 * too. Deterministic and free of I/O, so it runs in the workflow sandbox.
 */
export const WORKFLOW_STATES = [
  'pending',
  'running',
  'paused',
  'succeeded',
  'failed',
  'cancelled',
] as const;
export type WorkflowState = (typeof WORKFLOW_STATES)[number];
export const ACTIVE_WORKFLOW_STATES: readonly WorkflowState[] = ['pending', 'running', 'paused'];
export const TERMINAL_WORKFLOW_STATES: readonly WorkflowState[] = [
  'succeeded',
  'failed',
  'cancelled',
];

export const NODE_STATES = [
  'pending',
  'running',
  'retrying',
  'waiting_approval',
  'succeeded',
  'failed',
  'skipped',
  'cancelled',
] as const;
export type NodeState = (typeof NODE_STATES)[number];
export const TERMINAL_NODE_STATES: readonly NodeState[] = [
  'succeeded',
  'failed',
  'skipped',
  'cancelled',
];
export const isTerminalNode = (state: NodeState) => TERMINAL_NODE_STATES.includes(state);

export const EDGE_CONDITIONS = ['on_success', 'on_failure', 'always'] as const;
export type EdgeCondition = (typeof EDGE_CONDITIONS)[number];
export type FailurePolicy = 'fail_fast' | 'continue';

export interface DagEdge {
  from: string;
  to: string;
  condition: EdgeCondition;
}

export interface DagShape {
  refs: string[];
  edges: DagEdge[];
  failurePolicy: FailurePolicy;
}

export type NodeStates = Record<string, NodeState>;

/** Which upstream outcomes satisfy a condition (skipped and cancelled satisfy none). */
const SATISFIED_BY: Record<EdgeCondition, readonly NodeState[]> = {
  on_success: ['succeeded'],
  on_failure: ['failed'],
  always: ['succeeded', 'failed'],
};

type EdgeVerdict = 'satisfied' | 'never' | 'waiting';

function edgeVerdict(edge: DagEdge, upstream: NodeState): EdgeVerdict {
  if (SATISFIED_BY[edge.condition].includes(upstream)) return 'satisfied';
  return isTerminalNode(upstream) ? 'never' : 'waiting';
}

/** A node on a failure path: an incoming on_failure or always edge (fail_fast still runs it). */
const onFailurePath = (incoming: DagEdge[]) => incoming.some((e) => e.condition !== 'on_success');

export interface Step {
  /** Pending nodes whose incoming edges are all satisfied: to start (a run, or a gate). */
  start: string[];
  /** Pending nodes that can never start, skips propagated. */
  skip: string[];
}

/** What a pending node becomes now: started, skipped, or left waiting. */
function pendingVerdict(
  incoming: DagEdge[],
  states: NodeStates,
  failFastStopped: boolean,
): 'start' | 'skip' | 'wait' {
  const verdicts = incoming.map((edge) => edgeVerdict(edge, states[edge.from]!));
  if (verdicts.includes('never')) return 'skip';
  // fail_fast: after a failure only failure-path nodes go on; the rest are skipped.
  if (failFastStopped && !onFailurePath(incoming)) return 'skip';
  return verdicts.every((v) => v === 'satisfied') ? 'start' : 'wait';
}

/**
 * The engine's next step from the nodes' states: the pending nodes to skip (propagated until
 * nothing more is skipped) and, unless the workflow is paused, those to start.
 */
export function nextStep(dag: DagShape, current: NodeStates, paused: boolean): Step {
  const states = { ...current };
  const incoming = new Map<string, DagEdge[]>(dag.refs.map((ref) => [ref, []]));
  for (const edge of dag.edges) incoming.get(edge.to)!.push(edge);
  const skip: string[] = [];
  let start: string[] = [];
  for (let changed = true; changed;) {
    changed = false;
    start = [];
    const stopped = dag.failurePolicy === 'fail_fast' && Object.values(states).includes('failed');
    for (const ref of dag.refs) {
      if (states[ref] !== 'pending') continue;
      const verdict = pendingVerdict(incoming.get(ref)!, states, stopped);
      if (verdict === 'skip') {
        states[ref] = 'skipped';
        skip.push(ref);
        changed = true;
      } else if (verdict === 'start') start.push(ref);
    }
  }
  return { start: paused ? [] : start, skip };
}

export type WorkflowOutcome = 'succeeded' | 'failed';

/** The workflow's end once every node is terminal (null while one is not). */
export function outcomeOf(states: NodeStates): WorkflowOutcome | null {
  const all = Object.values(states);
  if (!all.every(isTerminalNode)) return null;
  return all.includes('failed') ? 'failed' : 'succeeded';
}

/** A node and every node downstream of it (a node retry resets them all to pending). */
export function downstreamClosure(dag: Pick<DagShape, 'edges'>, ref: string): string[] {
  const closure = new Set([ref]);
  for (let grew = true; grew;) {
    grew = false;
    for (const edge of dag.edges)
      if (closure.has(edge.from) && !closure.has(edge.to)) {
        closure.add(edge.to);
        grew = true;
      }
  }
  return [...closure];
}

/** `SVC_INPUT_<REF>`: the ref upper-cased, every non-alphanumeric an underscore. */
export const inputVariable = (ref: string) =>
  `SVC_INPUT_${ref.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;

export type GraphProblem =
  | { kind: 'duplicate_ref'; ref: string }
  | { kind: 'unknown_edge_ref'; ref: string }
  | { kind: 'duplicate_edge'; from: string; to: string }
  | { kind: 'unknown_input_ref'; ref: string }
  | { kind: 'cycle'; refs: string[] };

/** What makes a graph invalid (400 invalid_graph), the first found; null when it is a DAG. */
export function graphProblem(
  nodes: { ref: string; inputs_from?: string[] }[],
  edges: Pick<DagEdge, 'from' | 'to'>[],
): GraphProblem | null {
  const refs = new Set<string>();
  for (const { ref } of nodes) {
    if (refs.has(ref)) return { kind: 'duplicate_ref', ref };
    refs.add(ref);
  }
  const pairs = new Set<string>();
  for (const edge of edges) {
    for (const ref of [edge.from, edge.to])
      if (!refs.has(ref)) return { kind: 'unknown_edge_ref', ref };
    // One edge per pair: two conditions between the same nodes would say two things at once.
    const pair = JSON.stringify([edge.from, edge.to]);
    if (pairs.has(pair)) return { kind: 'duplicate_edge', from: edge.from, to: edge.to };
    pairs.add(pair);
  }
  for (const node of nodes)
    for (const ref of node.inputs_from ?? [])
      if (!refs.has(ref)) return { kind: 'unknown_input_ref', ref };
  const cycle = cycleOf([...refs], edges);
  return cycle ? { kind: 'cycle', refs: cycle } : null;
}

/**
 * The nodes on a cycle or downstream of one: those left after peeling off, again and again, every
 * node without an incoming edge (Kahn's algorithm); null when none is left.
 */
function cycleOf(refs: string[], edges: Pick<DagEdge, 'from' | 'to'>[]): string[] | null {
  const indegree = new Map(refs.map((ref) => [ref, 0]));
  for (const edge of edges) indegree.set(edge.to, indegree.get(edge.to)! + 1);
  const ready = refs.filter((ref) => indegree.get(ref) === 0);
  const peeled = new Set<string>();
  while (ready.length > 0) {
    const ref = ready.pop()!;
    peeled.add(ref);
    for (const edge of edges.filter((e) => e.from === ref)) {
      const left = indegree.get(edge.to)! - 1;
      indegree.set(edge.to, left);
      if (left === 0) ready.push(edge.to);
    }
  }
  const cyclic = refs.filter((ref) => !peeled.has(ref));
  return cyclic.length > 0 ? cyclic : null;
}
