import { z } from 'zod';
import { ulid } from '../ids';
import { countRow, selectOneRow, sql, type DatabasePool, type Tx } from '../pool';
import {
  EDGE_CONDITIONS,
  NODE_STATES,
  TERMINAL_WORKFLOW_STATES,
  WORKFLOW_STATES,
  isTerminalNode,
  type DagEdge,
  type FailurePolicy,
  type NodeState,
} from '../../contracts/runs/dag-rules';
import type { NodeSpec } from '../../contracts/runs/dag';
import { insertWorkflowEvent, type WorkflowState } from './workflows';

/**
 * The writes of the DAG workflow dag/<workflow_id> (workflows/runs/dag.ts): each state change of
 * the workflow or its nodes with its event, in one transaction, keyed by event ids the workflow
 * made, so a retried activity changes nothing twice.
 */

const dagWorkflowRow = z.object({
  state: z.enum(WORKFLOW_STATES),
  failure_policy: z.enum(['fail_fast', 'continue']) satisfies z.ZodType<FailurePolicy>,
  scheduled_start: z.string().nullable(),
});

/** A node as the workflow drives it; retries and retry_backoff_seconds are in every stored spec. */
export const loadedNode = z.object({
  ref: z.string(),
  type: z.enum(['container', 'approval']),
  state: z.enum(NODE_STATES),
  attempt: z.number(),
  retries: z.number(),
  retryBackoffSeconds: z.number(),
});
export type LoadedNode = z.infer<typeof loadedNode>;

const dagEdge = z.object({
  from: z.string(),
  to: z.string(),
  condition: z.enum(EDGE_CONDITIONS),
}) satisfies z.ZodType<DagEdge>;

export interface LoadedDag {
  state: WorkflowState;
  failurePolicy: FailurePolicy;
  /** A template run's deferred start (the whole graph waits for it); null: at once. */
  scheduledStart: string | null;
  nodes: LoadedNode[];
  edges: DagEdge[];
}

/** What the workflow needs to drive a DAG: states and rules, not what each node runs. */
export async function loadDag(pool: DatabasePool, workflowId: string): Promise<LoadedDag | null> {
  const workflow = await pool.maybeOne(sql.type(dagWorkflowRow)`
    SELECT state, failure_policy, scheduled_start FROM runs.workflows
    WHERE workflow_id = ${workflowId}`);
  if (!workflow) return null;
  const nodes = await pool.any(sql.type(loadedNode)`
    SELECT ref, type, state, attempt, (spec->>'retries')::int AS retries,
           (spec->>'retry_backoff_seconds')::int AS "retryBackoffSeconds"
    FROM runs.workflow_nodes WHERE workflow_id = ${workflowId} ORDER BY position`);
  const edges = await pool.any(sql.type(dagEdge)`
    SELECT from_ref AS "from", to_ref AS "to", condition FROM runs.workflow_edges
    WHERE workflow_id = ${workflowId} ORDER BY position`);
  return {
    state: workflow.state,
    failurePolicy: workflow.failure_policy,
    scheduledStart: workflow.scheduled_start,
    nodes: [...nodes],
    edges: [...edges],
  };
}

/** Columns a node's change may set beside its state. */
export interface NodeFields {
  exit_code?: number | null;
  output?: unknown;
}

export interface NodeChange {
  eventId: string;
  ref: string;
  from: NodeState;
  to: NodeState;
  detail?: Record<string, unknown>;
  fields?: NodeFields;
}

export interface WorkflowChange {
  eventId: string;
  from: WorkflowState;
  to: WorkflowState;
  detail?: Record<string, unknown>;
}

export interface DagChanges {
  workflowId: string;
  tenantId: string;
  /** Written first (its event before the nodes'), unless `workflowLast`. */
  workflow?: WorkflowChange;
  nodes?: NodeChange[];
  /** The workflow's change is written after its nodes' (a workflow that ends after them). */
  workflowLast?: boolean;
  /**
   * This change makes a finished workflow active again (a node retry): it is refused when the
   * tenant already has max_concurrent_workflows active ones.
   */
  reactivates?: boolean;
}

/**
 * Records changes of a workflow and its nodes, each with its event, in one transaction; nothing
 * when the first event is already stored (a retried activity). 'workflow_quota_exceeded' when a
 * reactivation would pass the tenant's cap (nothing written).
 */
export async function recordDagChanges(
  pool: DatabasePool,
  changes: DagChanges,
): Promise<'applied' | 'already_applied' | 'workflow_quota_exceeded'> {
  const first = changes.workflowLast
    ? (changes.nodes?.[0]?.eventId ?? changes.workflow?.eventId)
    : (changes.workflow?.eventId ?? changes.nodes?.[0]?.eventId);
  if (first === undefined) return 'applied';
  return pool.transaction(async (tx) => {
    if (await eventStored(tx, first)) return 'already_applied';
    const w = changes.workflow;
    if (changes.reactivates && !(await roomForOneMore(tx, changes.tenantId)))
      return 'workflow_quota_exceeded';
    if (w && !changes.workflowLast) await changeWorkflow(tx, changes, w);
    for (const node of changes.nodes ?? []) await changeNode(tx, changes, node);
    if (w && changes.workflowLast) await changeWorkflow(tx, changes, w);
    return 'applied';
  });
}

async function eventStored(tx: Tx, eventId: string): Promise<boolean> {
  return (
    (await tx.maybeOne(
      sql.type(selectOneRow)`SELECT 1 FROM runs.workflow_events WHERE event_id = ${eventId}`,
    )) !== null
  );
}

const maxConcurrentWorkflowsRow = z.object({ max_concurrent_workflows: z.number() });

/** Serialized with submits on the tenant's quota row (as insertSubmittedWorkflow). */
async function roomForOneMore(tx: Tx, tenantId: string): Promise<boolean> {
  const cap = await tx.oneFirst(sql.type(maxConcurrentWorkflowsRow)`
    SELECT max_concurrent_workflows FROM runs.tenant_quotas
    WHERE tenant_id = ${tenantId} FOR UPDATE`);
  const active = await tx.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.workflows
    WHERE tenant_id = ${tenantId} AND state IN ('pending', 'running', 'paused')`);
  return active < cap;
}

async function changeWorkflow(tx: Tx, changes: DagChanges, w: WorkflowChange): Promise<void> {
  const terminal = TERMINAL_WORKFLOW_STATES.includes(w.to);
  await tx.query(sql.unsafe`
    UPDATE runs.workflows SET state = ${w.to},
      finished_at = CASE WHEN ${terminal} THEN date_trunc('milliseconds', now()) END,
      updated_at = date_trunc('milliseconds', now())
    WHERE workflow_id = ${changes.workflowId}`);
  await insertWorkflowEvent(tx, {
    eventId: w.eventId,
    workflowId: changes.workflowId,
    tenantId: changes.tenantId,
    nodeRef: null,
    from: w.from,
    to: w.to,
    detail: w.detail ?? {},
  });
}

async function changeNode(tx: Tx, changes: DagChanges, n: NodeChange): Promise<void> {
  const terminal = isTerminalNode(n.to);
  const fields = n.fields ?? {};
  const setsOutput = 'output' in fields;
  await tx.query(sql.unsafe`
    UPDATE runs.workflow_nodes SET state = ${n.to},
      started_at = CASE WHEN ${n.to === 'pending'} THEN NULL
                        WHEN ${n.to === 'waiting_approval'} THEN date_trunc('milliseconds', now())
                        ELSE started_at END,
      finished_at = CASE WHEN ${terminal} THEN date_trunc('milliseconds', now()) END,
      exit_code = CASE WHEN ${'exit_code' in fields} THEN ${fields.exit_code ?? null}::int
                       WHEN ${n.to === 'pending'} THEN NULL ELSE exit_code END,
      output = CASE WHEN ${setsOutput} THEN ${setsOutput ? JSON.stringify(fields.output ?? null) : null}::jsonb
                    WHEN ${n.to === 'pending'} THEN NULL ELSE output END
    WHERE workflow_id = ${changes.workflowId} AND ref = ${n.ref}`);
  await insertWorkflowEvent(tx, {
    eventId: n.eventId,
    workflowId: changes.workflowId,
    tenantId: changes.tenantId,
    nodeRef: n.ref,
    from: n.from,
    to: n.to,
    detail: n.detail ?? {},
  });
}

/** What a node attempt runs, as stored at submit, with its upstreams' outputs. */
export interface AttemptSource {
  spec: NodeSpec;
  name: string | null;
  tags: string[];
  keyId: string | null;
  /** Each `inputs_from` ref's output (null when it has none). */
  inputs: { ref: string; output: unknown }[];
}

/** A node's spec as stored at submit (services/runs/dags/submit.ts, acceptedNodes). */
const nodeSpec = z.object({
  image: z.string().optional(),
  command: z.array(z.string()),
  env: z.record(z.string()),
  inputs_from: z.array(z.string()),
  retries: z.number(),
  retry_backoff_seconds: z.number(),
  cpu_limit: z.number().optional(),
  memory_limit_mb: z.number().optional(),
  timeout_seconds: z.number().optional(),
}) satisfies z.ZodType<NodeSpec>;

const attemptSourceRow = z.object({
  spec: nodeSpec,
  name: z.string().nullable(),
  tags: z.array(z.string()),
  key_id: z.string().nullable(),
});

const nodeOutputRow = z.object({ ref: z.string(), output: z.unknown() });

export async function attemptSource(
  db: Pick<DatabasePool, 'one' | 'any'>,
  workflowId: string,
  ref: string,
): Promise<AttemptSource> {
  const row = await db.one(sql.type(attemptSourceRow)`
    SELECT n.spec, w.name, w.tags, w.key_id FROM runs.workflow_nodes n
    JOIN runs.workflows w USING (workflow_id)
    WHERE n.workflow_id = ${workflowId} AND n.ref = ${ref}`);
  const inputs = await db.any(sql.type(nodeOutputRow)`
    SELECT ref, output FROM runs.workflow_nodes
    WHERE workflow_id = ${workflowId} AND ref = ANY(${sql.array(row.spec.inputs_from, 'text')})`);
  const byRef = new Map(inputs.map((i) => [i.ref, i.output]));
  return {
    spec: row.spec,
    name: row.name,
    tags: row.tags,
    keyId: row.key_id,
    inputs: row.spec.inputs_from.map((r) => ({ ref: r, output: byRef.get(r) ?? null })),
  };
}

export interface NodeRun {
  trackId: string;
  tenantId: string;
  keyId: string | null;
  workflowId: string;
  nodeRef: string;
  image: string;
  command: string[];
  env: Record<string, string>;
  name: string | null;
  tags: string[];
  eligibleStart: string;
  workingHoursApplied: boolean;
  maxQueueSeconds: number;
  cpuLimit: number;
  memoryLimitMb: number;
  timeoutSeconds: number;
  metered: boolean;
  /** A metered run's seconds held by the quota service; else null. */
  quotaReservationId: string | null;
}

/**
 * A node attempt's run: its row (no workflow_input: the DAG starts it as a child) and its first
 * event, with the node's change to running; once (the node change's event id keys it). The run is not counted against the day again: its node was,
 * at submit.
 */
export async function insertNodeRun(
  pool: DatabasePool,
  run: NodeRun,
  change: Omit<DagChanges, 'workflow'> & { nodes: [NodeChange] },
): Promise<void> {
  await pool.transaction(async (tx) => {
    if (await eventStored(tx, change.nodes[0].eventId)) return;
    await tx.query(sql.unsafe`
      INSERT INTO runs.runs (track_id, tenant_id, key_id, image, command, env, name, tags,
                             eligible_start, working_hours_applied, max_queue_seconds, cpu_limit,
                             memory_limit_mb, timeout_seconds, clamped, metered, quota_reservation_id,
                             workflow_id, node_ref)
      VALUES (${run.trackId}, ${run.tenantId}, ${run.keyId}, ${run.image}, ${sql.jsonb(run.command)},
              ${sql.jsonb(run.env)}, ${run.name}, ${sql.array(run.tags, 'text')},
              ${run.eligibleStart}::timestamptz, ${run.workingHoursApplied}, ${run.maxQueueSeconds},
              ${String(run.cpuLimit)}::numeric, ${run.memoryLimitMb}, ${run.timeoutSeconds}, false,
              ${run.metered}, ${run.quotaReservationId}, ${run.workflowId}, ${run.nodeRef})`);
    await tx.query(sql.unsafe`
      INSERT INTO runs.run_events (event_id, track_id, tenant_id, from_state, to_state, event_type, reason, payload)
      VALUES (${ulid()}, ${run.trackId}, ${run.tenantId}, NULL, 'scheduled', 'run.scheduled', NULL,
              ${sql.jsonb({ eligible_start: run.eligibleStart, workflow_id: run.workflowId, node_ref: run.nodeRef })})`);
    const node = change.nodes[0];
    await tx.query(sql.unsafe`
      UPDATE runs.workflow_nodes SET state = 'running',
        attempt = attempt + 1, attempts = attempts || ${run.trackId}::text,
        current_track_id = ${run.trackId}, exit_code = NULL, output = NULL, finished_at = NULL,
        started_at = CASE WHEN ${node.from} = 'pending' THEN date_trunc('milliseconds', now())
                          ELSE started_at END
      WHERE workflow_id = ${run.workflowId} AND ref = ${run.nodeRef}`);
    await tx.query(sql.unsafe`
      UPDATE runs.workflows SET started_at = coalesce(started_at, date_trunc('milliseconds', now()))
      WHERE workflow_id = ${run.workflowId}`);
    await insertWorkflowEvent(tx, {
      eventId: node.eventId,
      workflowId: change.workflowId,
      tenantId: change.tenantId,
      nodeRef: node.ref,
      from: node.from,
      to: 'running',
      detail: node.detail ?? {},
    });
  });
}

const nodeRunEndRow = z.object({
  stdoutFile: z.string().nullable(),
  exitCode: z.number().nullable(),
});

/** Where a finished node run's stdout is, and how it ended. */
export async function nodeRunEnd(
  db: Pick<DatabasePool, 'maybeOne'>,
  trackId: string,
): Promise<{ stdoutFile: string | null; exitCode: number | null } | null> {
  return db.maybeOne(sql.type(nodeRunEndRow)`
    SELECT stdout_file AS "stdoutFile", exit_code AS "exitCode" FROM runs.runs
    WHERE track_id = ${trackId}`);
}
