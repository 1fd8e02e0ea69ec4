/**
 * The DAG workflow dag/<workflow_id>: one execution drives a workflow of the runs service from
 * pending to a terminal state, applying the spec's rules (dag-rules.ts) after every change.
 *
 * SHAPE: it reads its DAG from Postgres (a local activity; the row is the truth), records
 * pending → running, then repeatedly starts what nextStep allows and skips what it must. A
 * container node's attempt is a run row (local activity) and a child workflow run/<track_id>
 * (runWorkflow: the run's own slot, launch, follow and crash re-attach); its end is one local
 * activity that reads the run's output. A gate parks in waiting_approval (a durable wait, no
 * timer). Controls are updates (dag-controls.ts). Every change is written with its events in
 * one transaction, in the order decided; the attempts' launches and ends that one activation
 * decides (a fan-out's launches; a node's end and the launch it allows) are one local activity.
 * A trivial node in a chain costs one local activity and a child's start and end.
 *
 * A node retry on a finished workflow starts a new execution of the same id (update-with-start
 * from the API); it reads the DAG as left and drives the reset nodes. History stays small: a
 * 50-node DAG with every node retried 10 times is ~6,000 events, under Temporal's limits, so
 * there is no continue-as-new.
 *
 * PATCHES: dag-scheduled-start (step 2: patched(); see untilScheduledStart);
 * dag-cancel-after-nodes (step 2: patched(); see cancel in dag-controls.ts); dag-batched-writes
 * (step 2: patched(); see DagExecution.writeAttempt). RECORDED HISTORIES
 * (test/histories/runs/dag-*.json) prove each shape: `.before-batched-writes.json` executions
 * started before dag-batched-writes, dag-scheduled.json the deferred one.
 */
import { CancellationScope, allHandlersFinished, condition, patched } from '@temporalio/workflow';
import { handleDagControls } from './dag-controls';
import type { DagWorkflowInput } from '../../contracts/runs/dag';
import { DagExecution } from './dag-execution';
import { startNode } from './dag-nodes';
import { nextStep, outcomeOf, type WorkflowState } from '../../contracts/runs/dag-rules';

export { dagWorkflowId } from '../../contracts/runs/dag';

export interface DagEnded {
  state: WorkflowState;
}

export async function dagWorkflow(input: DagWorkflowInput): Promise<DagEnded> {
  const dag = new DagExecution(input);
  handleDagControls(dag);
  // An operator's cancel becomes the DAG's own cancel (dag-controls.ts): nothing is cut short.
  return CancellationScope.nonCancellable(async () => {
    await dag.load();
    await untilScheduledStart(dag);
    do {
      await drive(dag);
      await condition(allHandlersFinished);
    } while (!dag.settled());
    // A change decided as the last node ended (an operator's cancel) is written before the end.
    await dag.flushed();
    return { state: dag.state };
  });
}

/**
 * A template run's scheduled_start defers the whole graph: the workflow stays pending (a durable
 * timer; a cancel ends the wait). Patch `dag-scheduled-start` (step 2, patched()): only an
 * execution with a start still ahead takes the wait, and records the marker.
 */
const SCHEDULED_START_PATCH = 'dag-scheduled-start';

async function untilScheduledStart(dag: DagExecution): Promise<void> {
  const waitMs = dag.scheduledStart === null ? 0 : Date.parse(dag.scheduledStart) - Date.now();
  if (dag.state !== 'pending' || waitMs <= 0 || !patched(SCHEDULED_START_PATCH)) return;
  await condition(() => dag.cancelling, waitMs);
}

/**
 * pending → running, then: skip what can never run, start what may (not while paused or
 * cancelled), until every node is terminal; the workflow then ends succeeded or failed (a
 * cancelled one already is).
 */
async function drive(dag: DagExecution): Promise<void> {
  if (dag.state === 'pending') void dag.change({ workflow: 'running' });
  for (;;) {
    const seen = dag.version;
    if (!dag.cancelling) {
      const step = nextStep(dag.shape, dag.nodeStates(), dag.state === 'paused');
      if (step.skip.length > 0)
        void dag.change({ nodes: step.skip.map((ref) => ({ ref, to: 'skipped' as const })) });
      for (const ref of step.start) startNode(dag, dag.node(ref)!);
    }
    const outcome = outcomeOf(dag.nodeStates());
    if (outcome !== null) {
      // A cancel records the workflow's end itself, once its nodes have ended (dag-controls.ts).
      if (!dag.isTerminal() && !dag.cancelling)
        void dag.change({ workflow: outcome, workflowLast: true });
      await dag.flushed();
      return;
    }
    await condition(() => dag.version !== seen);
  }
}
