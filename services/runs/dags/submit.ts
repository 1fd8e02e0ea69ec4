import { ulid } from '../../../db/ids';
import type { PlatformDeps } from '../../../platform/deps';
import { taskQueues } from '../../../contracts/shared/task-queues';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import type { AuditRecordInput } from '../../../db/runs/audit';
import {
  insertSubmittedWorkflow,
  type NewWorkflow,
  type NewWorkflowNode,
  type SubmitOutcome,
  type WorkflowSecretRow,
} from '../../../db/runs/workflows';
import type { NodeSpec } from '../../../contracts/runs/dag';
import { graphProblem, type DagEdge, type FailurePolicy } from '../../../contracts/runs/dag-rules';
import { runsError } from '../errors';
import { imageAllowed, parseImageReference } from '../image-reference';
import { clampLimits, effectiveLimits, type EffectiveLimits } from '../limits';
import { inlineWebhookRow, type InlineWebhookBody } from '../webhooks/inline';
import { dagWorkflowInput, type DagStarter } from './starter';
import { meteringRefusal, type MeteringDeps } from '../metering';

/** A node as its schema (routes/workflows.ts) accepted it: defaults filled, unknown keys gone. */
export interface NodeRequest {
  ref: string;
  type: 'container' | 'approval';
  /** Present for a container node (its schema requires it), stripped from an approval node. */
  image?: string;
  command: string[];
  env: Record<string, string>;
  inputs_from: string[];
  retries: number;
  retry_backoff_seconds: number;
  timeout_seconds: number | null;
  cpu_limit: number | null;
  memory_limit_mb: number | null;
}

/** The submit body as its schema accepted it (the wire's names). */
export interface WorkflowSubmitBody {
  name?: string | null;
  tags: string[];
  failure_policy: FailurePolicy;
  nodes: NodeRequest[];
  edges: DagEdge[];
  webhook?: InlineWebhookBody;
}

/** What a template run adds to a submit: all stored with the workflow, in its transaction. */
export interface TemplateLaunch {
  templateId: string;
  /** Deferred start of the whole graph (a UTC instant, past ones already clamped); null: none. */
  scheduledStart: string | null;
  /** Its secret parameters, encrypted for the workflow id this submit makes. */
  sealSecrets: (workflowId: string) => WorkflowSecretRow[];
  /** Its audit record (template.run), given the workflow id. */
  audit: (workflowId: string) => AuditRecordInput;
  /** The trigger occurrence launching it, if a trigger's fire does. */
  trigger?: { triggerId: string; occurrence: string };
}

export interface WorkflowSubmitResponse {
  workflow_id: string;
  status: 'pending';
  clamped: boolean;
}

/**
 * Accepts a DAG workflow: checks what its schema cannot (size against the key's quota, the
 * graph, each image's grammar and allowlist, its inline webhook's url and events), clamps each
 * container node's limits as a run's, stores it pending with every node counted against the UTC
 * day (and its inline webhook), and has its execution dag/<workflow_id> started after the commit.
 * A template run (`launch`) goes the same way, its template, start and secrets stored with it.
 */
export async function submitWorkflow(
  deps: Pick<PlatformDeps, 'pool' | 'config'> & MeteringDeps,
  starter: Pick<DagStarter, 'startInBackground'>,
  principal: KeyPrincipal,
  body: WorkflowSubmitBody,
  launch: TemplateLaunch | null = null,
): Promise<WorkflowSubmitResponse> {
  // max_nodes_per_workflow narrowed by the tier's workflow_nodes; checked first, as the cheapest.
  const limits = effectiveLimits(principal.quotas, principal.tier);
  if (body.nodes.length > limits.workflow_nodes)
    throw runsError('too_many_nodes', { details: { max_nodes: limits.workflow_nodes } });
  const problem = graphProblem(body.nodes, body.edges);
  if (problem) throw runsError('invalid_graph', { details: { problem } });
  assertImages(body.nodes, principal.tier?.allowed_images ?? null);
  const webhook = inlineWebhookRow(body.webhook);
  const { nodes, clamped } = acceptedNodes(body.nodes, limits);

  const workflowId = ulid();
  const input = dagWorkflowInput(deps, principal, workflowId, {
    name: body.name ?? null,
    nodeCount: nodes.length,
  });
  const workflow: NewWorkflow = {
    workflowId,
    tenantId: principal.tenantId,
    keyId: principal.keyId,
    name: body.name ?? null,
    tags: body.tags,
    failurePolicy: body.failure_policy,
    templateId: launch?.templateId ?? null,
    scheduledStart: launch?.scheduledStart ?? null,
    nodes,
    edges: body.edges,
    workflowInput: input,
    workflowTaskQueue: taskQueues(deps.config.taskQueuePrefix).runs,
    eventId: ulid(),
    webhook,
    secrets: launch?.sealSecrets(workflowId) ?? [],
    audit: launch?.audit(workflowId),
    trigger: launch?.trigger ?? null,
  };
  const outcome = await storeWorkflow(deps, principal, workflow, limits);
  if (outcome !== 'stored') throw storeRefusal(outcome, principal, limits);
  // Not awaited: the row holds the input; the starter's sweeper retries a failed start.
  starter.startInBackground(input);
  return { workflow_id: workflowId, status: 'pending', clamped };
}

/** Each container node's image as a run's: its grammar (400), then the key's allowlist (403). */
function assertImages(nodes: NodeRequest[], allowlist: string[] | null): void {
  for (const { ref, image } of nodes) {
    if (image === undefined) continue;
    if (!parseImageReference(image))
      throw runsError('invalid_image', { message: `invalid_image:${image}`, details: { ref } });
    if (!imageAllowed(image, allowlist))
      throw runsError('image_not_allowed', { details: { image, ref } });
  }
}

/**
 * The nodes as stored: a container node's limits filled and clamped exactly as a run's (the
 * numbers its runs get); an approval node runs nothing, so it keeps only what the engine reads.
 */
export function acceptedNodes(
  requested: NodeRequest[],
  limits: EffectiveLimits,
): { nodes: NewWorkflowNode[]; clamped: boolean } {
  let clamped = false;
  const nodes = requested.map((node): NewWorkflowNode => {
    const common = {
      inputs_from: node.inputs_from,
      retry_backoff_seconds: node.retry_backoff_seconds,
    };
    if (node.type === 'approval') {
      const spec: NodeSpec = { command: [], env: {}, retries: 0, ...common };
      return { ref: node.ref, type: 'approval', spec: { ...spec } };
    }
    const fitted = clampLimits(
      {
        timeoutSeconds: node.timeout_seconds,
        cpuLimit: node.cpu_limit,
        memoryLimitMb: node.memory_limit_mb,
      },
      limits,
    );
    clamped ||= fitted.clamped;
    const spec: NodeSpec = {
      image: node.image,
      command: node.command,
      env: node.env,
      retries: node.retries,
      ...common,
      cpu_limit: fitted.cpuLimit,
      memory_limit_mb: fitted.memoryLimitMb,
      timeout_seconds: fitted.timeoutSeconds,
    };
    return { ref: node.ref, type: 'container', spec: { ...spec } };
  });
  return { nodes, clamped };
}

/** Seconds a metered key would be charged if every container node ran once to its timeout. */
const meteredSecondsOf = (nodes: NewWorkflowNode[]) =>
  nodes.reduce((sum, n) => sum + Number(n.spec.timeout_seconds ?? 0), 0);

type StoreOutcome = SubmitOutcome | { meteredRefused: { limit: number; used: number } };

/**
 * Stores the workflow (insertSubmittedWorkflow: concurrent workflows, the day's runs). A metered
 * key's container nodes are first checked against its day in the quota service, holding
 * nothing: each node run reserves its own seconds when it is made, so the submit only refuses a
 * workflow whose nodes could not all run to their timeouts within what is left of the day.
 */
async function storeWorkflow(
  deps: Pick<PlatformDeps, 'pool'> & MeteringDeps,
  principal: KeyPrincipal,
  workflow: NewWorkflow,
  limits: EffectiveLimits,
): Promise<StoreOutcome> {
  const { metering } = deps;
  if (principal.tier?.metered && metering) {
    const fits = await metering
      .check(principal, meteredSecondsOf(workflow.nodes))
      .catch(meteringRefusal);
    if ('refused' in fits) return { meteredRefused: fits.refused };
  }
  return insertSubmittedWorkflow(deps.pool, workflow, {
    maxConcurrent: principal.quotas.max_concurrent_workflows,
    dailyLimit: limits.daily_runs,
  });
}

function storeRefusal(
  outcome: Exclude<StoreOutcome, 'stored'>,
  principal: KeyPrincipal,
  limits: EffectiveLimits,
) {
  if (typeof outcome === 'object')
    return runsError('metered_quota_exceeded', {
      details: {
        metered_seconds_per_day: outcome.meteredRefused.limit,
        used_seconds: outcome.meteredRefused.used,
      },
    });
  const details = {
    workflow_quota_exceeded: {
      max_concurrent_workflows: principal.quotas.max_concurrent_workflows,
    },
    daily_quota_exceeded: { max_daily_runs: limits.daily_runs },
  }[outcome];
  return runsError(outcome, { details });
}
