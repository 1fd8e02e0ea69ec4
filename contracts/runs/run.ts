import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/**
 * What the runs API and the run workflow share: ids, input, updates. Pure, so both the
 * sandboxed workflow bundle and the API import it.
 */
export const RUN_STATES = [
  'scheduled',
  'queued',
  'pulling',
  'running',
  'paused',
  'exited',
  'failed',
  'timeout',
  'killed',
] as const;
export type RunState = (typeof RUN_STATES)[number];
export const ACTIVE_STATES: readonly RunState[] = [
  'scheduled',
  'queued',
  'pulling',
  'running',
  'paused',
];
export const TERMINAL_STATES: readonly RunState[] = ['exited', 'failed', 'timeout', 'killed'];
/** States that hold a concurrency slot (queued is the moment of taking it, before pulling). */
export const SLOT_STATES: readonly RunState[] = ['queued', 'pulling', 'running', 'paused'];
export const isTerminal = (state: RunState): boolean => TERMINAL_STATES.includes(state);

/** Columns a state change may set beside the state ('now' = the database's clock). */
export interface TransitionFields {
  worker_id?: string;
  container_id?: string;
  exit_code?: number | null;
  stdout_file?: string;
  stderr_file?: string;
  stdout_bytes?: string;
  stderr_bytes?: string;
  result_summary?: string | null;
  started_at?: 'now';
  finished_at?: 'now';
}

/** One state change of a run and its event (the catalogue's event type, e.g. run.paused). */
export interface Transition {
  trackId: string;
  /** Made by the workflow (deterministic ULID): a retried activity finds it stored and stops. */
  eventId: string;
  from: RunState;
  to: RunState;
  eventType: string;
  reason?: string | null;
  payload?: Record<string, unknown>;
  fields?: TransitionFields;
}

export type TransitionOutcome = 'applied' | 'already_applied' | 'conflict';

export const runWorkflowId = (trackId: string): string => `run/${trackId}`;

/** The container label that ties a container to its run (with OWNER_LABEL = run/<track_id>). */
export const TRACK_ID_LABEL = 'platform.runs.track_id';
export const runContainerOwner = (trackId: string): string => `run/${trackId}`;
/**
 * The run's container name on its host: a retried or re-attaching activity finds the container
 * by name (one inspect) instead of listing containers by label.
 */
export const runContainerName = (trackId: string): string => `platform-run-${trackId}`;

export interface RunWorkflowInput {
  trackId: string;
  tenantId: string;
  image: string;
  command: string[];
  env: Record<string, string>;
  /** Cores, as a number (0.001 resolution). */
  cpuLimit: number;
  memoryLimitMb: number;
  timeoutSeconds: number;
  /** ISO-8601 UTC instants. */
  eligibleStart: string;
  expiresAt: string | null;
  maxQueueSeconds: number;
  /** Concurrency cap of the key's tier, applied beside the tenant quota (null: none). */
  tierConcurrentRuns: number | null;
  metered: boolean;
  /** The any-host Docker queue, carried in the input so a replay under any task queue works. */
  dockerAnyHostQueue: string;
  /**
   * The tenant's working hours (TJP) the run was accepted under, when they applied: a run that
   * waits for a slot takes one only within them. Absent in runs submitted before.
   */
  workingHoursTjp?: string | null;
}

/** Grace between SIGTERM and SIGKILL on POST /stop. */
export const STOP_GRACE_SECONDS = 10;

export type ControlAction = 'pause' | 'resume' | 'stop' | 'kill';

/**
 * Control is decided by the workflow: each update's validator refuses it in a wrong state
 * (the API answers 409 with the validator's message), and a handler marks the run as
 * changing before its first await, so of two racing calls only one is accepted.
 */
export const pauseUpdate = defineUpdate<void>('pause');
export const resumeUpdate = defineUpdate<void>('resume');
export const stopUpdate = defineUpdate<void>('stop');
export const killUpdate = defineUpdate<void>('kill');
export const controlUpdates = {
  pause: pauseUpdate,
  resume: resumeUpdate,
  stop: stopUpdate,
  kill: killUpdate,
};

/**
 * Sent to the tenant's longest-waiting runs when a run gives its slot back, so a waiting run
 * asks for a slot at once instead of at its next fallback poll.
 */
export const slotFreedSignal = defineSignal('slotFreed');

/**
 * Sent by a node run's DAG workflow when the DAG is cancelled: the run ends `killed` (reason
 * workflow_cancelled) wherever it is: a waiting run at once, a launched one by a kill.
 */
export const cancelRunSignal = defineSignal('cancelRun');
export const WORKFLOW_CANCELLED = 'workflow_cancelled';

/**
 * Sent by the reconciler when the host of a running or paused run has not announced itself for
 * longer than its grace: the host is taken for lost, and the run ends `failed` (reason
 * host_lost) without waiting for a follow activity that only that host could carry out.
 */
export interface HostLost {
  workerId: string;
  /** How long the host had been silent when the reconciler judged it. */
  silentSeconds: number;
}
export const hostLostSignal = defineSignal<[HostLost]>('hostLost');
export const HOST_LOST = 'host_lost';

/** The run's state as the workflow sees it (for operators in the CLI/Web UI). */
export const runStateQuery = defineQuery<string>('runState');

/**
 * The states from which each control is accepted: the run workflow's update validators decide by
 * it, and the API waits for a workflow that has not caught up with a row in one of them.
 */
export const CONTROL_FROM_STATES: Record<ControlAction, readonly RunState[]> = {
  pause: ['running'],
  resume: ['paused'],
  stop: ['running', 'paused'],
  kill: ['running', 'paused'],
};

/** The validator's rejection message, which the API returns as the 409 detail. */
export const CONFLICT_MESSAGES: Record<ControlAction, string> = {
  pause: 'not_running',
  resume: 'not_paused',
  stop: 'not_running',
  kill: 'not_running',
};
