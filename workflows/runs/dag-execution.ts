import {
  ApplicationFailure,
  condition,
  patched,
  proxyLocalActivities,
  upsertSearchAttributes,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type { DagActivities, LaunchedAttempt, NodeAttemptWrite } from '../../activities/runs/dag';
import { localPostgresProfile } from '../shared/activity-profiles';
import { DAG_STATE } from '../../contracts/shared/search-attributes';
import type { DagWorkflowInput } from '../../contracts/runs/dag';
import {
  TERMINAL_WORKFLOW_STATES,
  isTerminalNode,
  type WorkflowState,
  type DagEdge,
  type DagShape,
  type FailurePolicy,
  type NodeState,
  type NodeStates,
} from '../../contracts/runs/dag-rules';
import { nextWorkflowUlid, workflowUlid } from './ids';
import type { runWorkflow } from './run';

/** Node attempts' launches and ends of one activation in one local activity (writeAttempt). */
const BATCHED_WRITES_PATCH = 'dag-batched-writes';

/** A node as its DAG's execution sees it. */
export interface DagNode {
  ref: string;
  type: 'container' | 'approval';
  state: NodeState;
  /** Attempts made, over every activation of the node (its runs, oldest first, in Postgres). */
  attempt: number;
  retries: number;
  retryBackoffSeconds: number;
  /** Failed attempts retried in this activation (a node retry starts it again at 0). */
  retriesUsed: number;
  /** The run of the attempt in flight, once started. */
  child: ChildWorkflowHandle<typeof runWorkflow> | null;
}

/** A change of the workflow's state and of some of its nodes', as the execution decides it. */
export interface DagChange {
  workflow?: WorkflowState;
  workflowDetail?: Record<string, unknown>;
  nodes?: { ref: string; to: NodeState; detail?: Record<string, unknown> }[];
  /** The workflow's event after its nodes' (it ends because of them). */
  workflowLast?: boolean;
  /** A finished workflow made active again: refused past max_concurrent_workflows. */
  reactivates?: boolean;
}

/**
 * One DAG as its workflow execution sees it, shared by the driver, the node tasks and the
 * control handlers. Every change is applied here at once (so a racing update's validator sees
 * it) and written to Postgres after every earlier write, so the events feed lists changes in
 * the order they were decided.
 */
export class DagExecution {
  readonly db = proxyLocalActivities<DagActivities>(localPostgresProfile);
  state: WorkflowState = 'pending';
  failurePolicy: FailurePolicy = 'fail_fast';
  /** A template run's deferred start: the graph waits for it (ISO instant; null: none). */
  scheduledStart: string | null = null;
  edges: DagEdge[] = [];
  readonly nodes = new Map<string, DagNode>();
  loaded = false;
  cancelling = false;
  /** Bumped whenever the driver has something new to look at. */
  version = 0;
  /** Patch dag-batched-writes: node attempts' writes of one activation in one local activity. */
  batchedWrites = false;
  private lastEventId: string | null = null;
  private writes: Promise<unknown> = Promise.resolve();
  private readonly attemptWrites: {
    item: NodeAttemptWrite;
    resolve: (answer: LaunchedAttempt | null) => void;
    reject: (error: unknown) => void;
  }[] = [];

  constructor(readonly input: DagWorkflowInput) {}

  async load(): Promise<void> {
    const dag = await this.db.loadDag({ workflowId: this.input.workflowId });
    if (dag === null)
      throw ApplicationFailure.nonRetryable(
        `workflow ${this.input.workflowId} not found`,
        'WorkflowNotFound',
      );
    this.state = dag.state;
    this.failurePolicy = dag.failurePolicy;
    // Absent from a load recorded before templates: no deferred start.
    this.scheduledStart = dag.scheduledStart ?? null;
    this.edges = dag.edges;
    for (const node of dag.nodes)
      this.nodes.set(node.ref, { ...node, retriesUsed: 0, child: null });
    this.loaded = true;
    this.batchedWrites = patched(BATCHED_WRITES_PATCH);
  }

  get shape(): DagShape {
    return { refs: [...this.nodes.keys()], edges: this.edges, failurePolicy: this.failurePolicy };
  }

  nodeStates(): NodeStates {
    return Object.fromEntries([...this.nodes.values()].map((n) => [n.ref, n.state]));
  }

  node(ref: string): DagNode | undefined {
    return this.nodes.get(ref);
  }

  isTerminal(): boolean {
    return TERMINAL_WORKFLOW_STATES.includes(this.state);
  }

  /** Terminal, every node too: nothing is left for this execution to do. */
  settled(): boolean {
    return this.isTerminal() && [...this.nodes.values()].every((n) => isTerminalNode(n.state));
  }

  wake(): void {
    this.version++;
  }

  nextEventId(): string {
    return (this.lastEventId = nextWorkflowUlid(this.lastEventId));
  }

  /** A fresh track id for a node attempt (deterministic: the workflow's clock and seed). */
  newTrackId(): string {
    return workflowUlid();
  }

  /**
   * Writes a node attempt's launch or end in its turn. With patch dag-batched-writes, the
   * launches and ends one activation asks for (a fan-out's launches; a node's end and the
   * launch it allows) are one local activity, in the order asked; before it, one each.
   */
  writeAttempt(item: NodeAttemptWrite): Promise<LaunchedAttempt | null> {
    if (!this.batchedWrites) {
      return this.write(() =>
        'launch' in item
          ? this.db.launchNodeAttempt(item.launch)
          : this.db.endNodeAttempt(item.end).then(() => null),
      );
    }
    return new Promise((resolve, reject) => {
      this.attemptWrites.push({ item, resolve, reject });
      if (this.attemptWrites.length === 1) void this.write(() => this.flushAttemptWrites());
    });
  }

  private async flushAttemptWrites(): Promise<void> {
    // Waits for the activation's next check of conditions (a condition is also checked when it
    // is made, so the first check answers no): by then the driver has decided what this write
    // allows, and its launches are queued here too.
    let checked = false;
    await condition(() => {
      const again = checked;
      checked = true;
      return again;
    });
    const batch = this.attemptWrites.splice(0);
    try {
      const answers = await this.db.writeNodeAttempts({ items: batch.map((b) => b.item) });
      batch.forEach((b, i) => b.resolve(answers[i] ?? null));
    } catch (error) {
      for (const b of batch) b.reject(error);
    }
  }

  /** Runs a Postgres write after every earlier one. */
  write<T>(step: () => Promise<T>): Promise<T> {
    const written = this.writes.then(step);
    this.writes = written.catch(() => undefined);
    return written;
  }

  /** Every write asked for has been made, those asked for while waiting too. */
  async flushed(): Promise<void> {
    let last: Promise<unknown>;
    do {
      last = this.writes;
      await last;
    } while (last !== this.writes);
  }

  /** Applies a change here now and writes it (with its events) in its turn. */
  change(c: DagChange) {
    const workflowChange = c.workflow === undefined ? undefined : this.moveWorkflow(c);
    const nodes = (c.nodes ?? []).map((n) => {
      const node = this.nodes.get(n.ref)!;
      const from = node.state;
      node.state = n.to;
      return { eventId: this.nextEventId(), ref: n.ref, from, to: n.to, detail: n.detail };
    });
    const { workflowId, tenantId } = this.input;
    return this.write(() =>
      this.db.recordDagChanges({
        workflowId,
        tenantId,
        workflow: workflowChange,
        nodes,
        workflowLast: c.workflowLast,
        reactivates: c.reactivates,
      }),
    );
  }

  /** The states before a change that Postgres refused (its events are not written). */
  snapshot(): () => void {
    const state = this.state;
    const nodes = this.nodeStates();
    return () => {
      if (this.state !== state) upsertSearchAttributes([{ key: DAG_STATE, value: state }]);
      this.state = state;
      for (const [ref, nodeState] of Object.entries(nodes)) this.nodes.get(ref)!.state = nodeState;
    };
  }

  private moveWorkflow(c: DagChange) {
    const from = this.state;
    this.state = c.workflow!;
    if (from !== this.state) upsertSearchAttributes([{ key: DAG_STATE, value: this.state }]);
    return { eventId: this.nextEventId(), from, to: this.state, detail: c.workflowDetail };
  }
}
