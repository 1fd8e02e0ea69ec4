import { ParentClosePolicy, condition, startChild } from '@temporalio/workflow';
import { RUN_STATE, executionSearchAttributes } from '../../contracts/shared/search-attributes';
import { runSummary } from '../../contracts/runs/summaries';
import { cancelRunSignal, runWorkflowId } from '../../contracts/runs/run';
import type { DagExecution, DagNode } from './dag-execution';
import type { NodeState } from '../../contracts/runs/dag-rules';
import { runWorkflow } from './run';
import type { RunEnded } from './run-execution';
import type { LaunchRefusal } from '../../activities/runs/dag';

/**
 * Starts a node whose incoming edges are all satisfied: an approval gate parks in
 * waiting_approval (the approve and reject updates end it); a container node runs its attempts.
 */
export function startNode(dag: DagExecution, node: DagNode): void {
  if (node.type === 'approval')
    void dag.change({ nodes: [{ ref: node.ref, to: 'waiting_approval' }] });
  else void runContainerNode(dag, node);
}

/**
 * A container node: each attempt one run, a child workflow run/<track_id> (so the run keeps
 * every run endpoint and its own crash re-attach), until one succeeds (exit 0), the retries are
 * spent, or the DAG is cancelled. Between attempts it waits retry_backoff_seconds in retrying,
 * and no new attempt launches while the DAG is paused.
 */
async function runContainerNode(dag: DagExecution, node: DagNode): Promise<void> {
  let from: NodeState = node.state;
  for (;;) {
    node.state = 'running';
    node.attempt += 1;
    const trackId = dag.newTrackId();
    const ended = await runAttempt(dag, node, from, trackId);
    if (typeof ended === 'string') {
      // Failed without a run (its inputs, or its secrets): recorded by the launch itself.
      node.state = 'failed';
      dag.wake();
      return;
    }
    const to = attemptEnd(dag, node, ended);
    const change = {
      eventId: dag.nextEventId(),
      ref: node.ref,
      from: 'running' as const,
      to,
      detail: { attempt: node.attempt, track_id: trackId, run_state: ended.state },
    };
    node.state = to;
    const { workflowId, tenantId } = dag.input;
    const written = dag.writeAttempt({
      end: { changes: { workflowId, tenantId, nodes: [change] }, trackId },
    });
    // Batched, the driver decides what this end allows at once: its launches join the write.
    if (dag.batchedWrites) dag.wake();
    await written;
    if (!dag.batchedWrites) dag.wake();
    if (to !== 'retrying') return;
    node.retriesUsed += 1;
    // A cancel ends the backoff (the node is cancelled); a pause holds the next launch.
    await condition(() => node.state !== 'retrying', node.retryBackoffSeconds * 1000);
    await condition(() => node.state !== 'retrying' || dag.state !== 'paused');
    if (node.state !== 'retrying') return;
    from = 'retrying';
  }
}

/** One attempt: its run stored, started as a child, and followed to its end. */
async function runAttempt(
  dag: DagExecution,
  node: DagNode,
  from: NodeState,
  trackId: string,
): Promise<RunEnded | LaunchRefusal> {
  const { workflowId, tenantId, terms } = dag.input;
  const change = {
    eventId: dag.nextEventId(),
    ref: node.ref,
    from,
    detail: { attempt: node.attempt, track_id: trackId },
  };
  const launched = (await dag.writeAttempt({
    launch: { workflowId, tenantId, ref: node.ref, trackId, change, terms },
  }))!;
  if ('failed' in launched) return launched.failed;
  const child = await startChild(runWorkflow, {
    workflowId: runWorkflowId(trackId),
    args: [launched.run],
    // The run outlives an operator's terminate of its DAG: its container is never orphaned.
    parentClosePolicy: ParentClosePolicy.ABANDON,
    typedSearchAttributes: [
      ...executionSearchAttributes(tenantId, 'runs'),
      { key: RUN_STATE, value: 'scheduled' },
    ],
    // User metadata: not part of the command's determinism check (replay of older histories).
    ...runSummary(launched.run),
  });
  node.child = child;
  // A cancel that came while the run was being stored: the run ends killed at once.
  if (dag.cancelling) await child.signal(cancelRunSignal).catch(() => undefined);
  try {
    return await child.result();
  } catch {
    // The run's execution failed or was terminated (an operator's doing): the attempt failed.
    return { state: 'failed', exitCode: null };
  } finally {
    node.child = null;
  }
}

/** What a node becomes when an attempt's run has ended. */
function attemptEnd(dag: DagExecution, node: DagNode, ended: RunEnded): NodeState {
  if (ended.state === 'exited' && ended.exitCode === 0) return 'succeeded';
  if (dag.cancelling) return 'cancelled';
  return node.retriesUsed < node.retries ? 'retrying' : 'failed';
}
