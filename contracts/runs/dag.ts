import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { NodeState } from './dag-rules';

/**
 * What the runs API and the DAG workflow share: its id, input, updates and refusal codes. Pure,
 * so both the sandboxed workflow bundle and the API import it.
 */
export const dagWorkflowId = (workflowId: string): string => `dag/${workflowId}`;

/** How every node run of one DAG waits, is limited and is charged (the key's terms at start). */
export interface DagRunTerms {
  maxQueueSeconds: number;
  /** Concurrency cap of the key's tier, applied beside the tenant quota (null: none). */
  tierConcurrentRuns: number | null;
  metered: boolean;
  /** The tenant's working hours (TJP): a node run becomes eligible at the next working instant. */
  workingHoursTjp: string | null;
  /** The any-host Docker queue, carried in the input so a replay under any task queue works. */
  dockerAnyHostQueue: string;
}

/**
 * One execution of dag/<workflow_id>. The graph, its specs and its node states are read from
 * Postgres when the execution starts (the row is the truth), so a node retry on a finished
 * workflow starts a new execution of the same id with the same input shape.
 */
export interface DagWorkflowInput {
  workflowId: string;
  tenantId: string;
  /** The key that submitted it (its runs are that key's). */
  keyId: string | null;
  terms: DagRunTerms;
  /**
   * The DAG's name and node count at submit, for its execution's summary in the Web UI only
   * (contracts/runs/summaries.ts); absent in executions started before.
   */
  name?: string | null;
  nodeCount?: number;
}

/** A node as stored at submit: the run it makes, with limits already clamped. */
export interface NodeSpec {
  image?: string;
  command: string[];
  env: Record<string, string>;
  inputs_from: string[];
  retries: number;
  retry_backoff_seconds: number;
  cpu_limit?: number;
  memory_limit_mb?: number;
  timeout_seconds?: number;
}

/** What a node retry answers: the refs reset to pending (the node first, then its closure). */
export interface NodeRetried {
  reset: string[];
}

/**
 * Control is decided by the workflow (validators, then a handler that changes its state before
 * its first await), so of two racing calls one wins. A refusal's message is the spec's 409 code
 * (or 404 node_not_found, 429 workflow_quota_exceeded), which the API answers as is.
 */
export const pauseDagUpdate = defineUpdate<void>('pauseWorkflow');
export const resumeDagUpdate = defineUpdate<void>('resumeWorkflow');
export const cancelDagUpdate = defineUpdate<void>('cancelWorkflow');
export const approveNodeUpdate = defineUpdate<void, [string]>('approveNode');
export const rejectNodeUpdate = defineUpdate<void, [string]>('rejectNode');
/** Also sent with update-with-start: a finished workflow's execution is started again for it. */
export const retryNodeUpdate = defineUpdate<NodeRetried, [string]>('retryNode');

/** The workflow's and its nodes' states as the execution sees them (for operators). */
export const dagStateQuery = defineQuery<{ state: string; nodes: Record<string, NodeState> }>(
  'dagState',
);

export const DAG_REFUSALS = [
  'not_pausable',
  'not_paused',
  'already_terminal',
  'not_an_approval_node',
  'not_awaiting_approval',
  'node_not_terminal',
  'not_terminal',
  'node_not_found',
  'workflow_quota_exceeded',
] as const;
export type DagRefusal = (typeof DAG_REFUSALS)[number];

/** Injected inputs (the `SVC_INPUT_*` values, in UTF-8 bytes) above this fail the node. */
export const INPUTS_MAX_BYTES = 64 * 1024;
/** A node's output is read from at most this much of its last stdout line. */
export const OUTPUT_MAX_BYTES = 1024 * 1024;
