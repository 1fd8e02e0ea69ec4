import { z } from 'zod';
import { countRow, sql, type DatabasePool } from '../pool';
import { insertAudit, type AuditRecordInput } from './audit';
import { inlineWebhookInsert, type InlineWebhookRow } from './webhooks';
import { storedWorkflowInput } from './runs';
import {
  EDGE_CONDITIONS,
  NODE_STATES,
  WORKFLOW_STATES,
  type FailurePolicy,
  type EdgeCondition,
  type NodeState,
  type WorkflowState,
} from '../../contracts/runs/dag-rules';
import type { DagWorkflowInput } from '../../contracts/runs/dag';

/**
 * DAG workflows in Postgres (migration runs/0007): the rows the API reads and the workflow
 * dag/<workflow_id> keeps current, each change with its event in one transaction.
 */
export {
  ACTIVE_WORKFLOW_STATES,
  WORKFLOW_STATES,
  type WorkflowState,
} from '../../contracts/runs/dag-rules';

type Queryable = Pick<DatabasePool, 'query' | 'one' | 'maybeOne' | 'any' | 'oneFirst'>;

export interface NewWorkflowNode {
  ref: string;
  type: 'container' | 'approval';
  /** What the node runs, as accepted: image, command, env, inputs_from, retries, clamped limits. */
  spec: Record<string, unknown>;
}

export interface NewWorkflow {
  workflowId: string;
  tenantId: string;
  keyId: string | null;
  name: string | null;
  tags: string[];
  failurePolicy: FailurePolicy;
  templateId: string | null;
  /**
   * A template run's deferred start (already clamped to now when past): the engine launches no
   * node before it. None: as soon as possible.
   */
  scheduledStart?: string | null;
  nodes: NewWorkflowNode[];
  edges: { from: string; to: string; condition: EdgeCondition }[];
  workflowInput: unknown;
  workflowTaskQueue: string;
  /** The first event's id (workflow → pending). */
  eventId: string;
  /** Its inline webhook, stored with it; none: absent or null. */
  webhook?: InlineWebhookRow | null;
  /** A template run's secret parameters, each encrypted (never in clear), stored with it. */
  secrets?: WorkflowSecretRow[];
  /** The audit record of the change that made it (a template run), written with it. */
  audit?: AuditRecordInput;
  /** The trigger occurrence that launched it: a second launch of it fails (unique key). */
  trigger?: { triggerId: string; occurrence: string } | null;
}

/** One secret parameter of a template run: its name and its ciphertext (platform/secrets.ts). */
export const workflowSecretRow = z.object({ name: z.string(), ciphertext: z.string() });
export type WorkflowSecretRow = z.infer<typeof workflowSecretRow>;

export type SubmitOutcome = 'stored' | 'workflow_quota_exceeded' | 'daily_quota_exceeded';

/**
 * Stores a submitted workflow with its nodes, edges, first event and inline webhook, unless the tenant already
 * has `maxConcurrent` active workflows, or its nodes do not fit in the day's `dailyLimit` of runs
 * (the spec's Limits: each workflow node counts as a run, approval gates too; all are counted
 * now, so an accepted workflow never stops on the daily limit half-way; retries are not counted
 * again). A tenant's submits are serialized on its quota row.
 */
export async function insertSubmittedWorkflow(
  db: Pick<DatabasePool, 'transaction'>,
  workflow: NewWorkflow,
  limits: { maxConcurrent: number; dailyLimit: number },
): Promise<SubmitOutcome> {
  // In a caller's transaction (a metered key's lock), a savepoint: what it refuses is undone.
  return db.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      SELECT 1 FROM runs.tenant_quotas WHERE tenant_id = ${workflow.tenantId} FOR UPDATE`);
    const active = await tx.oneFirst(sql.type(countRow)`
      SELECT count(*)::int FROM runs.workflows
      WHERE tenant_id = ${workflow.tenantId} AND state IN ('pending', 'running', 'paused')`);
    if (active >= limits.maxConcurrent) return 'workflow_quota_exceeded';
    const runs = workflow.nodes.length;
    const counted = await tx.query(sql.unsafe`
      INSERT INTO runs.daily_submissions AS d (tenant_id, day, count)
      SELECT ${workflow.tenantId}, (now() AT TIME ZONE 'UTC')::date, ${runs}::int
      WHERE ${runs}::int <= ${limits.dailyLimit}::int
      ON CONFLICT (tenant_id, day) DO UPDATE SET count = d.count + excluded.count
        WHERE d.count + excluded.count <= ${limits.dailyLimit}::int
      RETURNING 1`);
    if (counted.rowCount === 0) return 'daily_quota_exceeded';
    await insertRows(tx, workflow);
    return 'stored';
  });
}

async function insertRows(tx: Queryable, w: NewWorkflow): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO runs.workflows (workflow_id, tenant_id, key_id, name, tags, failure_policy,
                                template_id, scheduled_start, workflow_input, workflow_task_queue,
                                trigger_id, trigger_occurrence)
    VALUES (${w.workflowId}, ${w.tenantId}, ${w.keyId}, ${w.name}, ${sql.array(w.tags, 'text')},
            ${w.failurePolicy}, ${w.templateId}, ${w.scheduledStart ?? null}::timestamptz,
            ${sql.jsonb(w.workflowInput as never)}, ${w.workflowTaskQueue},
            ${w.trigger?.triggerId ?? null}, ${w.trigger?.occurrence ?? null}::timestamptz)`);
  await tx.query(sql.unsafe`
    INSERT INTO runs.workflow_nodes (workflow_id, ref, position, type, spec)
    SELECT ${w.workflowId}, ref, position, type, spec
    FROM unnest(${sql.array(
      w.nodes.map((n) => n.ref),
      'text',
    )}::text[], ${sql.array(
      w.nodes.map((n) => n.type),
      'text',
    )}::text[], ${sql.array(
      w.nodes.map((n) => JSON.stringify(n.spec)),
      'jsonb',
    )}::jsonb[]) WITH ORDINALITY AS n(ref, type, spec, position)`);
  if (w.edges.length > 0)
    await tx.query(sql.unsafe`
      INSERT INTO runs.workflow_edges (workflow_id, from_ref, to_ref, condition, position)
      SELECT ${w.workflowId}, from_ref, to_ref, condition, position
      FROM unnest(${sql.array(
        w.edges.map((e) => e.from),
        'text',
      )}::text[], ${sql.array(
        w.edges.map((e) => e.to),
        'text',
      )}::text[], ${sql.array(
        w.edges.map((e) => e.condition),
        'text',
      )}::text[]) WITH ORDINALITY AS e(from_ref, to_ref, condition, position)`);
  if (w.webhook)
    await tx.query(sql.unsafe`${inlineWebhookInsert(w.tenantId, w.workflowId, w.webhook)}`);
  if (w.secrets && w.secrets.length > 0)
    await tx.query(sql.unsafe`
      INSERT INTO runs.workflow_secrets (workflow_id, name, ciphertext)
      SELECT ${w.workflowId}, name, ciphertext
      FROM unnest(${sql.array(
        w.secrets.map((s) => s.name),
        'text',
      )}::text[], ${sql.array(
        w.secrets.map((s) => s.ciphertext),
        'text',
      )}::text[]) AS s(name, ciphertext)`);
  if (w.audit) await insertAudit(tx, w.audit);
  await insertWorkflowEvent(tx, {
    eventId: w.eventId,
    workflowId: w.workflowId,
    tenantId: w.tenantId,
    nodeRef: null,
    from: null,
    to: 'pending',
    detail: {},
  });
}

export interface WorkflowEventInput {
  eventId: string;
  workflowId: string;
  tenantId: string;
  /** null: an event of the workflow itself. */
  nodeRef: string | null;
  from: WorkflowState | NodeState | null;
  to: WorkflowState | NodeState;
  detail: Record<string, unknown>;
}

/** Appends an event; one already written (a retried activity) is left alone. */
export async function insertWorkflowEvent(tx: Queryable, e: WorkflowEventInput): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO runs.workflow_events (event_id, workflow_id, tenant_id, node_ref, kind, from_state,
                                      to_state, detail)
    VALUES (${e.eventId}, ${e.workflowId}, ${e.tenantId}, ${e.nodeRef},
            ${e.nodeRef === null ? 'workflow' : 'node'}, ${e.from}, ${e.to}, ${sql.jsonb(e.detail as never)})
    ON CONFLICT (event_id) DO NOTHING`);
}

const failurePolicy = z.enum(['fail_fast', 'continue']) satisfies z.ZodType<FailurePolicy>;

export const workflowRow = z.object({
  workflow_id: z.string(),
  tenant_id: z.string(),
  name: z.string().nullable(),
  state: z.enum(WORKFLOW_STATES),
  failure_policy: failurePolicy,
  template_id: z.string().nullable(),
  submitted_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  tags: z.array(z.string()),
});
export type WorkflowRow = z.infer<typeof workflowRow>;
const WORKFLOW_COLUMNS = sql.fragment`
  workflow_id, tenant_id, name, state, failure_policy, template_id, submitted_at, started_at,
  finished_at, tags`;

export const workflowNodeRow = z.object({
  ref: z.string(),
  type: z.enum(['container', 'approval']),
  spec: z.record(z.unknown()),
  state: z.enum(NODE_STATES),
  attempt: z.number(),
  attempts: z.array(z.string()),
  current_track_id: z.string().nullable(),
  exit_code: z.number().nullable(),
  output: z.unknown(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type WorkflowNodeRow = z.infer<typeof workflowNodeRow>;

export const workflowEdgeRow = z.object({
  from_ref: z.string(),
  to_ref: z.string(),
  condition: z.enum(EDGE_CONDITIONS),
});
export type WorkflowEdgeRow = z.infer<typeof workflowEdgeRow>;

/** A tenant's workflow row alone; null: none (or not its). */
export async function findWorkflowRow(
  db: Queryable,
  tenantId: string,
  workflowId: string,
): Promise<WorkflowRow | null> {
  return db.maybeOne(sql.type(workflowRow)`
    SELECT ${WORKFLOW_COLUMNS} FROM runs.workflows
    WHERE tenant_id = ${tenantId} AND workflow_id = ${workflowId}`);
}

/** A tenant's workflow with its nodes and edges in submitted order; null: none (or not its). */
export async function findWorkflow(
  db: Queryable,
  tenantId: string,
  workflowId: string,
): Promise<{
  workflow: WorkflowRow;
  nodes: readonly WorkflowNodeRow[];
  edges: readonly WorkflowEdgeRow[];
} | null> {
  const workflow = await findWorkflowRow(db, tenantId, workflowId);
  if (!workflow) return null;
  const nodes = await db.any(sql.type(workflowNodeRow)`
    SELECT ref, type, spec, state, attempt, attempts, current_track_id, exit_code, output,
           started_at, finished_at
    FROM runs.workflow_nodes WHERE workflow_id = ${workflowId} ORDER BY position`);
  const edges = await db.any(sql.type(workflowEdgeRow)`
    SELECT from_ref, to_ref, condition FROM runs.workflow_edges
    WHERE workflow_id = ${workflowId} ORDER BY position`);
  return { workflow, nodes, edges };
}

export interface WorkflowFilter {
  states: WorkflowState[] | null;
  tag: string | null;
  templateId: string | null;
  limit: number;
  offset: number;
}

/** A tenant's workflows, newest first (their ids are ULIDs), without nodes and edges. */
export async function listWorkflows(
  db: Queryable,
  tenantId: string,
  filter: WorkflowFilter,
): Promise<readonly WorkflowRow[]> {
  const conditions = [sql.fragment`tenant_id = ${tenantId}`];
  if (filter.states)
    conditions.push(sql.fragment`state = ANY(${sql.array(filter.states, 'text')})`);
  if (filter.tag !== null)
    conditions.push(sql.fragment`tags @> ${sql.array([filter.tag], 'text')}`);
  if (filter.templateId !== null) conditions.push(sql.fragment`template_id = ${filter.templateId}`);
  return db.any(sql.type(workflowRow)`
    SELECT ${WORKFLOW_COLUMNS} FROM runs.workflows
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY workflow_id DESC LIMIT ${filter.limit} OFFSET ${filter.offset}`);
}

export const workflowEventRow = z.object({
  /** bigint, read as text. */
  id: z.string(),
  workflow_id: z.string(),
  node_ref: z.string().nullable(),
  kind: z.enum(['workflow', 'node']),
  to_state: z.string(),
  detail: z.record(z.unknown()),
  created_at: z.string(),
});
export type WorkflowEventRow = z.infer<typeof workflowEventRow>;

/** The events feed: a workflow's events after `since` (an id; 0 from the start), oldest first. */
export async function workflowEvents(
  db: Queryable,
  workflowId: string,
  since: string,
  limit: number,
): Promise<readonly WorkflowEventRow[]> {
  return db.any(sql.type(workflowEventRow)`
    SELECT id::text, workflow_id, node_ref, kind, to_state, detail, created_at
    FROM runs.workflow_events
    WHERE workflow_id = ${workflowId} AND id > ${since}::bigint
    ORDER BY workflow_events.id LIMIT ${limit}`);
}

/**
 * A workflow's secret parameters as stored (ciphertexts; the engine decrypts each with
 * decryptWorkflowSecret at node launch and substitutes its `${{ name }}` placeholders).
 */
export async function workflowSecrets(
  db: Queryable,
  workflowId: string,
): Promise<readonly WorkflowSecretRow[]> {
  return db.any(sql.type(workflowSecretRow)`
    SELECT name, ciphertext FROM runs.workflow_secrets
    WHERE workflow_id = ${workflowId} ORDER BY name`);
}

/** The executions of these workflows are started: the submit outbox has nothing left for them. */
export async function clearWorkflowInputs(db: Queryable, workflowIds: string[]): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE runs.workflows SET workflow_input = NULL
    WHERE workflow_id = ANY(${sql.array(workflowIds, 'text')})`);
}

/** A DAG's stored execution input (storedWorkflowInput). */
const dagWorkflowInput = storedWorkflowInput<DagWorkflowInput>('a DAG workflow input', [
  'workflowId',
  'tenantId',
]);

/**
 * The execution inputs of workflows on `queue` whose execution is not confirmed started,
 * submitted more than `graceSeconds` ago (younger ones are still being started by their process),
 * oldest first, none of `skip`.
 */
export async function dueWorkflowStarts(
  db: Pick<DatabasePool, 'anyFirst'>,
  w: { queue: string; graceSeconds: number; limit: number; skip: string[] },
): Promise<DagWorkflowInput[]> {
  const inputs = await db.anyFirst(sql.type(z.object({ workflow_input: dagWorkflowInput }))`
    SELECT workflow_input FROM runs.workflows
    WHERE workflow_input IS NOT NULL AND workflow_task_queue = ${w.queue}
      AND submitted_at < now() - make_interval(secs => ${w.graceSeconds})
      AND NOT (workflow_id = ANY(${sql.array(w.skip, 'text')}))
    ORDER BY submitted_at LIMIT ${w.limit}`);
  return [...inputs];
}
