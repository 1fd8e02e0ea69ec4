import fc from 'fast-check';
import {
  downstreamClosure,
  graphProblem,
  inputVariable,
  nextStep,
  outcomeOf,
  type DagEdge,
  type DagShape,
  type EdgeCondition,
  type FailurePolicy,
  type NodeStates,
} from '../../../contracts/runs/dag-rules';

type Outcome = 'succeeded' | 'failed';

/**
 * The engine's rules driven to the end: nodes finish one at a time in the order `picks` chooses
 * among those running, each with its given outcome. Records which nodes launched after a failure.
 */
function simulate(dag: DagShape, outcomes: Record<string, Outcome>, picks: number[]) {
  const states: NodeStates = Object.fromEntries(dag.refs.map((ref) => [ref, 'pending']));
  const launchedAfterFailure = new Set<string>();
  for (let turn = 0; ; turn++) {
    const step = nextStep(dag, states, false);
    for (const ref of step.skip) states[ref] = 'skipped';
    const failed = Object.values(states).includes('failed');
    for (const ref of step.start) {
      states[ref] = 'running';
      if (failed) launchedAfterFailure.add(ref);
    }
    const running = dag.refs.filter((ref) => states[ref] === 'running');
    if (running.length === 0) return { states, launchedAfterFailure };
    const done = running[picks[turn % picks.length]! % running.length]!;
    states[done] = outcomes[done]!;
  }
}

const SATISFIES: Record<EdgeCondition, Outcome[]> = {
  on_success: ['succeeded'],
  on_failure: ['failed'],
  always: ['succeeded', 'failed'],
};
const satisfied = (edge: DagEdge, upstream: string) =>
  (SATISFIES[edge.condition] as string[]).includes(upstream);

/**
 * The spec's rules read declaratively, for `continue`: in topological order, a node runs (and
 * ends with its outcome) when every incoming edge is satisfied by its upstream's end; otherwise
 * it is skipped. Timing cannot change this under `continue`.
 */
function reference(dag: DagShape, outcomes: Record<string, Outcome>): NodeStates {
  const final: NodeStates = {};
  for (const ref of dag.refs) {
    const incoming = dag.edges.filter((e) => e.to === ref);
    final[ref] = incoming.every((e) => satisfied(e, final[e.from]!)) ? outcomes[ref]! : 'skipped';
  }
  return final;
}

/** Random DAGs: edges only from an earlier node to a later one (refs are in a topological order). */
const condition = () => fc.constantFrom<EdgeCondition>('on_success', 'on_failure', 'always');
const dags = (policy: FailurePolicy) =>
  fc.integer({ min: 1, max: 8 }).chain((n) => {
    const refs = Array.from({ length: n }, (_, i) => `n${i}`);
    const pairs = refs.flatMap((from, i) => refs.slice(i + 1).map((to) => [from, to] as const));
    const edges = fc
      .subarray(pairs)
      .chain((chosen) =>
        fc
          .tuple(...chosen.map(condition))
          .map((conditions) =>
            chosen.map(([from, to], k): DagEdge => ({ from, to, condition: conditions[k]! })),
          ),
      );
    return fc.record({
      dag: edges.map((e): DagShape => ({ refs, edges: e, failurePolicy: policy })),
      outcomes: fc
        .array(fc.constantFrom<Outcome>('succeeded', 'failed'), { minLength: n, maxLength: n })
        .map((list) => Object.fromEntries(refs.map((ref, i) => [ref, list[i]!]))),
      picks: fc.array(fc.nat(), { minLength: 1, maxLength: 16 }),
    });
  });

describe('DAG rules against the spec (properties over random graphs and outcomes)', () => {
  it('continue: every node ends as the declarative reading of the rules says, whatever the timing', () => {
    fc.assert(
      fc.property(dags('continue'), ({ dag, outcomes, picks }) => {
        const { states } = simulate(dag, outcomes, picks);
        expect(states).toEqual(reference(dag, outcomes));
        expect(outcomeOf(states)).toBe(
          Object.values(states).includes('failed') ? 'failed' : 'succeeded',
        );
      }),
      { numRuns: 500 },
    );
  });

  it('fail_fast: the same when nothing fails; after a failure only failure-path nodes launch, the rest are skipped', () => {
    fc.assert(
      fc.property(dags('fail_fast'), ({ dag, outcomes, picks }) => {
        const { states, launchedAfterFailure } = simulate(dag, outcomes, picks);
        const incomingOf = (ref: string) => dag.edges.filter((e) => e.to === ref);
        if (!Object.values(states).includes('failed'))
          expect(states).toEqual(reference({ ...dag, failurePolicy: 'continue' }, outcomes));
        for (const ref of dag.refs) {
          const incoming = incomingOf(ref);
          const ran = states[ref] === 'succeeded' || states[ref] === 'failed';
          const ready = incoming.every((e) => satisfied(e, states[e.from]!));
          const failurePath = incoming.some((e) => e.condition !== 'on_success');
          // Only what the rules allow ran, with its own outcome.
          if (ran) expect([ready, states[ref]]).toEqual([true, outcomes[ref]]);
          if (launchedAfterFailure.has(ref)) expect(failurePath).toBe(true);
          // A failure-path node whose edges are satisfied is never skipped.
          if (ready && failurePath) expect(ran).toBe(true);
        }
        expect(outcomeOf(states)).toBe(
          Object.values(states).includes('failed') ? 'failed' : 'succeeded',
        );
      }),
      { numRuns: 500 },
    );
  });

  it('paused: nothing starts, skips still propagate', () => {
    const dag: DagShape = {
      refs: ['a', 'b', 'c'],
      edges: [
        { from: 'a', to: 'b', condition: 'on_success' },
        { from: 'b', to: 'c', condition: 'always' },
      ],
      failurePolicy: 'continue',
    };
    expect(nextStep(dag, { a: 'failed', b: 'pending', c: 'pending' }, true)).toEqual({
      start: [],
      skip: ['b', 'c'],
    });
    expect(nextStep(dag, { a: 'succeeded', b: 'pending', c: 'pending' }, true).start).toEqual([]);
    expect(nextStep(dag, { a: 'succeeded', b: 'pending', c: 'pending' }, false).start).toEqual([
      'b',
    ]);
  });
});

describe('graph validation', () => {
  const node = (ref: string, inputs_from: string[] = []) => ({ ref, inputs_from });
  it('names a duplicate ref, an edge or an input to a missing ref, a duplicate edge, and a cycle', () => {
    expect(graphProblem([node('a'), node('a')], [])).toEqual({ kind: 'duplicate_ref', ref: 'a' });
    expect(graphProblem([node('a')], [{ from: 'a', to: 'x' }])).toEqual({
      kind: 'unknown_edge_ref',
      ref: 'x',
    });
    expect(graphProblem([node('a', ['y'])], [])).toEqual({ kind: 'unknown_input_ref', ref: 'y' });
    expect(
      graphProblem(
        [node('a'), node('b')],
        [
          { from: 'a', to: 'b' },
          { from: 'a', to: 'b' },
        ],
      ),
    ).toEqual({ kind: 'duplicate_edge', from: 'a', to: 'b' });
    expect(
      graphProblem(
        [node('a'), node('b'), node('c'), node('d')],
        [
          { from: 'a', to: 'b' },
          { from: 'b', to: 'c' },
          { from: 'c', to: 'b' },
          { from: 'c', to: 'd' },
        ],
      ),
    ).toEqual({ kind: 'cycle', refs: ['b', 'c', 'd'] });
    expect(graphProblem([node('a')], [{ from: 'a', to: 'a' }])).toEqual({
      kind: 'cycle',
      refs: ['a'],
    });
    expect(graphProblem([node('a'), node('b', ['a'])], [{ from: 'a', to: 'b' }])).toBeNull();
  });

  it('finds a downstream closure and names input variables as the spec does', () => {
    const edges = [
      { from: 'a', to: 'b' },
      { from: 'b', to: 'c' },
      { from: 'x', to: 'c' },
    ] as DagEdge[];
    expect(downstreamClosure({ edges }, 'a').sort()).toEqual(['a', 'b', 'c']);
    expect(downstreamClosure({ edges }, 'c')).toEqual(['c']);
    expect(inputVariable('fetch-data.v2')).toBe('SVC_INPUT_FETCH_DATA_V2');
  });
});
