import {
  ApplicationFailure,
  CancellationScope,
  condition,
  patched,
  setHandler,
} from '@temporalio/workflow';
import type { UpdateDefinition } from '@temporalio/common';
import {
  approveNodeUpdate,
  cancelDagUpdate,
  dagStateQuery,
  pauseDagUpdate,
  rejectNodeUpdate,
  resumeDagUpdate,
  retryNodeUpdate,
  type DagRefusal,
  type NodeRetried,
} from '../../contracts/runs/dag';
import { cancelRunSignal } from '../../contracts/runs/run';
import type { DagExecution } from './dag-execution';
import { downstreamClosure, isTerminalNode, type NodeState } from '../../contracts/runs/dag-rules';

/**
 * What a DAG answers while its execution lives: its states (a query for operators) and its
 * controls as updates. Each update's validator refuses it in a wrong state with the spec's code
 * (the API answers it as is); its handler changes the state before its first await, so of two
 * racing calls (approve and reject, two cancels) exactly one wins. An execution started for a
 * node retry (update-with-start) takes the update before it has read its DAG: the handler then
 * decides once the DAG is read.
 */
export function handleDagControls(dag: DagExecution): void {
  setHandler(dagStateQuery, () => ({ state: dag.state, nodes: dag.nodeStates() }));
  decide(
    dag,
    pauseDagUpdate,
    () => pauseRefusal(dag),
    () => pause(dag),
  );
  decide(
    dag,
    resumeDagUpdate,
    () => resumeRefusal(dag),
    () => resume(dag),
  );
  decide(
    dag,
    cancelDagUpdate,
    () => cancelRefusal(dag),
    () => cancel(dag),
  );
  decide(
    dag,
    approveNodeUpdate,
    (ref) => gateRefusal(dag, ref),
    (ref) => decideGate(dag, ref, 'succeeded'),
  );
  decide(
    dag,
    rejectNodeUpdate,
    (ref) => gateRefusal(dag, ref),
    (ref) => decideGate(dag, ref, 'failed'),
  );
  decide(
    dag,
    retryNodeUpdate,
    (ref) => retryRefusal(dag, ref),
    (ref) => retryNode(dag, ref),
  );
  // An operator's cancel (Web UI, `temporal workflow cancel`) is the API's cancel.
  // Its steps run outside the cancelled root scope, where an activity would be cancelled at once.
  CancellationScope.current().cancelRequested.catch(() =>
    CancellationScope.nonCancellable(async () => {
      if (!dag.loaded) await condition(() => dag.loaded);
      if (cancelRefusal(dag) === null) await cancel(dag);
    }),
  );
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- UpdateDefinition's own bound
function decide<Args extends any[], Ret>(
  dag: DagExecution,
  update: UpdateDefinition<Ret, Args>,
  refusalOf: (...args: Args) => DagRefusal | null,
  act: (...args: Args) => Promise<Ret>,
): void {
  const refuse = (args: Args) => {
    const refusal = refusalOf(...args);
    if (refusal !== null) throw ApplicationFailure.nonRetryable(refusal, 'Refused');
  };
  setHandler(
    update,
    async (...args: Args) => {
      if (!dag.loaded) {
        await condition(() => dag.loaded);
        refuse(args);
      }
      return act(...args);
    },
    {
      validator: (...args: Args) => {
        if (dag.loaded) refuse(args);
      },
    },
  );
}

const pauseRefusal = (dag: DagExecution): DagRefusal | null =>
  (dag.state === 'pending' || dag.state === 'running') && !dag.cancelling ? null : 'not_pausable';

const resumeRefusal = (dag: DagExecution): DagRefusal | null =>
  dag.state === 'paused' ? null : 'not_paused';

const cancelRefusal = (dag: DagExecution): DagRefusal | null =>
  dag.isTerminal() || dag.cancelling ? 'already_terminal' : null;

function gateRefusal(dag: DagExecution, ref: string): DagRefusal | null {
  const node = dag.node(ref);
  if (!node) return 'node_not_found';
  if (node.type !== 'approval') return 'not_an_approval_node';
  return node.state === 'waiting_approval' ? null : 'not_awaiting_approval';
}

/** A node retry needs the node terminal, and the workflow finished with every node settled. */
function retryRefusal(dag: DagExecution, ref: string): DagRefusal | null {
  const node = dag.node(ref);
  if (!node) return 'node_not_found';
  if (!isTerminalNode(node.state)) return 'node_not_terminal';
  return dag.settled() ? null : 'not_terminal';
}

/** No new node launches; nodes in flight finish. */
async function pause(dag: DagExecution): Promise<void> {
  await dag.change({ workflow: 'paused' });
}

async function resume(dag: DagExecution): Promise<void> {
  await dag.change({ workflow: 'running' });
  dag.wake();
}

/**
 * Patch `dag-cancel-after-nodes` (step 2, patched()): the workflow is recorded cancelled once
 * every node is terminal, so it never reads cancelled beside a node still running (and its
 * workflow.cancelled event carries the nodes' final states). Before it, the workflow was
 * recorded cancelled at once and in-flight nodes followed.
 */
const CANCEL_AFTER_NODES_PATCH = 'dag-cancel-after-nodes';

/**
 * Every node not in flight cancelled at once; the runs in flight are killed (wherever they are: a
 * waiting run ends without starting), and their nodes end cancelled as they stop; then the
 * workflow is cancelled. The update answers once it is.
 */
async function cancel(dag: DagExecution): Promise<void> {
  dag.cancelling = true;
  const afterNodes = patched(CANCEL_AFTER_NODES_PATCH);
  const resting: NodeState[] = ['pending', 'retrying', 'waiting_approval'];
  const nodes = [...dag.nodes.values()].filter((n) => resting.includes(n.state));
  const inFlight = [...dag.nodes.values()].filter(
    (n) => !isTerminalNode(n.state) && !resting.includes(n.state),
  );
  const cancelNow = !afterNodes || inFlight.length === 0;
  const written =
    cancelNow || nodes.length > 0
      ? dag.change({
          ...(cancelNow ? { workflow: 'cancelled' as const } : {}),
          nodes: nodes.map((n) => ({ ref: n.ref, to: 'cancelled' as const })),
        })
      : null;
  // A node whose run is still being started is killed by its own task (dag-nodes.ts).
  const kills = inFlight.flatMap((n) =>
    n.child === null ? [] : [n.child.signal(cancelRunSignal).catch(() => undefined)],
  );
  await Promise.all([written, ...kills]);
  if (afterNodes && !dag.isTerminal()) {
    await condition(() => [...dag.nodes.values()].every((n) => isTerminalNode(n.state)));
    await dag.change({ workflow: 'cancelled' });
  }
  dag.wake();
}

async function decideGate(dag: DagExecution, ref: string, to: 'succeeded' | 'failed') {
  const decision = to === 'succeeded' ? 'approved' : 'rejected';
  await dag.change({ nodes: [{ ref, to, detail: { decision } }] });
  dag.wake();
}

/**
 * The node and its downstream closure back to pending, the workflow running again (unless the
 * tenant is at max_concurrent_workflows: then nothing changes).
 */
async function retryNode(dag: DagExecution, ref: string): Promise<NodeRetried> {
  const reset = downstreamClosure(dag, ref);
  const restore = dag.snapshot();
  const recorded = await dag.change({
    workflow: 'running',
    workflowDetail: { retried: ref },
    nodes: reset.map((r) => ({ ref: r, to: 'pending' as const, detail: { reset_by: ref } })),
    reactivates: true,
  });
  if (recorded === 'workflow_quota_exceeded') {
    restore();
    throw ApplicationFailure.nonRetryable('workflow_quota_exceeded', 'Refused');
  }
  for (const r of reset) dag.node(r)!.retriesUsed = 0;
  dag.wake();
  return { reset };
}
