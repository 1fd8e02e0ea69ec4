import {
  ActivityFailure,
  condition,
  proxyActivities,
  proxyLocalActivities,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { RunActivities } from '../../activities/runs/run';
import type { ContainerOutcome, RunDockerActivities } from '../../activities/runs/run-docker';
import { dockerCallProfile, localPostgresProfile } from '../shared/activity-profiles';
import { dockerHostQueue } from '../../contracts/shared/task-queues';
import { RUN_STATE } from '../../contracts/shared/search-attributes';
import {
  CONTROL_FROM_STATES,
  isTerminal,
  type ControlAction,
  type HostLost,
  type RunState,
  type RunWorkflowInput,
  type Transition,
  type TransitionFields,
  type TransitionOutcome,
} from '../../contracts/runs/run';
import { nextWorkflowUlid } from './ids';

/** How often a run reads a launch it has not seen while the image is pulled (untilLaunchSeen). */
const LAUNCH_READ_EVERY_MS = 1_000;

export type RunDockerProxy = ReturnType<typeof proxyActivities<RunDockerActivities>>;
export type FinalState = Extract<RunState, 'exited' | 'failed' | 'timeout' | 'killed'>;

/** What a run's workflow returns: the run's terminal state and its container's exit code. */
export interface RunEnded {
  state: FinalState;
  exitCode: number | null;
}

/** A terminal change as recorded, and the end it means for this execution. */
export interface TerminalChange {
  recorded: TransitionOutcome;
  own: RunEnded;
}

/**
 * One run as its workflow execution sees it, shared by the steps of runWorkflow and by the
 * control handlers: the state it last recorded, the control in flight, the container's end, and
 * the state changes. Every Postgres step is a local activity (in the workflow task); every state
 * change goes through transitionRunState (row + event, one transaction) or an activity that
 * records the transition it is given.
 */
export class RunExecution {
  readonly db = proxyLocalActivities<RunActivities>(localPostgresProfile);
  state: RunState = 'scheduled';
  /** The control being carried out; a second one is refused until it is done. */
  busy: ControlAction | 'timeout' | null = null;
  /** The end a stop, kill or timeout asked for (else the container's exit decides). */
  final: { state: FinalState; reason: string } | null = null;
  outcome: ContainerOutcome | null = null;
  followFailure: string | null = null;
  /** The Docker activities of the host that claimed the run (set by useHostQueue). */
  docker: RunDockerProxy | null = null;
  hostQueue: string | null = null;
  /**
   * The launch is handed to the hosts (claimLaunchAndFollowRun) and not yet seen here: the
   * row may be pulling, running or paused, on a host not yet known (seeLaunch reads it).
   */
  launchUnseen = false;
  /** When the container was seen running: the refund counts the seconds used from here. */
  containerStartedMs = 0;
  /** Set by the hostLost signal while the container is followed: its host is gone. */
  hostLost: HostLost | null = null;
  /** Set by the cancelRun signal (its DAG was cancelled): the run ends killed wherever it is. */
  cancelRequested = false;
  /** Set by the slotFreed signal: a waiting run asks for a slot at once. */
  readonly wake = { signalled: false };
  /** Event ids of this run's state changes, rising in the order they are made. */
  private lastEventId: string | null = null;

  constructor(readonly input: RunWorkflowInput) {}

  nextEventId(): string {
    return (this.lastEventId = nextWorkflowUlid(this.lastEventId));
  }

  /** Records a state change (a local activity), then follows it. */
  async move(
    to: RunState,
    eventType: string,
    reason: string | null,
    fields: TransitionFields = {},
    payload = {},
  ): Promise<TransitionOutcome> {
    const t = this.transitionTo(to, eventType, reason, fields, payload);
    const recorded = await this.db.transitionRunState(t);
    this.state = to;
    if (to !== t.from) upsertSearchAttributes([{ key: RUN_STATE, value: to }]);
    return recorded;
  }

  /** A state change for an activity that records it itself. */
  transitionTo(
    to: RunState,
    eventType: string,
    reason: string | null,
    fields: TransitionFields = {},
    payload = {},
  ): Transition {
    const { trackId } = this.input;
    return {
      trackId,
      eventId: this.nextEventId(),
      from: this.state,
      to,
      eventType,
      reason,
      payload,
      fields,
    };
  }

  /** Follows a state change an activity has recorded: the state and its search attribute. */
  applied(to: RunState): void {
    const from = this.state;
    this.state = to;
    if (to !== from) upsertSearchAttributes([{ key: RUN_STATE, value: to }]);
  }

  /**
   * The terminal change, slot hand-back and refund, and the container's removal: one host
   * activity, or a local one when the follow activity has already removed the container.
   */
  async finish(
    t: Transition,
    usedSeconds: number,
    containerRemoved = false,
  ): Promise<TransitionOutcome> {
    const end = {
      transition: t,
      tenantId: this.input.tenantId,
      maxConcurrent: this.input.tierConcurrentRuns,
      refundUsedSeconds: this.input.metered ? usedSeconds : null,
    };
    const recorded = containerRemoved
      ? await this.db.recordRunEnd(end)
      : await this.docker!.finishRun(end);
    this.applied(t.to);
    return recorded;
  }

  /** The Docker activities of this host's queue from now on. */
  useHostQueue(taskQueue: string): void {
    this.hostQueue = taskQueue;
    this.docker = proxyActivities<RunDockerActivities>({ ...dockerCallProfile, taskQueue });
  }

  /**
   * Reads a launch handed to the hosts until its container runs, the row is past launching, or
   * `stop` holds: a read of the row each second, only while its image is being pulled.
   */
  async untilLaunchSeen(stop: () => boolean): Promise<void> {
    while (this.launchUnseen && !stop()) {
      const state = await this.seeLaunch();
      if (state !== 'queued' && state !== 'pulling') return;
      await condition(() => !this.launchUnseen || stop(), LAUNCH_READ_EVERY_MS);
    }
  }

  /**
   * Reads a launch handed to the hosts (a local activity): once the row is running or paused,
   * the run takes its state, host and start, and is seen from then on. Returns the row's state.
   */
  async seeLaunch(): Promise<RunState | null> {
    const row = await this.db.readRunLaunch({ trackId: this.input.trackId });
    if (!this.launchUnseen || row === null) return row?.state ?? null;
    if ((row.state === 'running' || row.state === 'paused') && row.workerId !== null) {
      this.launchUnseen = false;
      this.useHostQueue(dockerHostQueue(this.input.dockerAnyHostQueue, row.workerId));
      this.containerStartedMs = row.startedAtMs ?? Date.now();
      this.applied(row.state);
    }
    return row.state;
  }

  /** The row's end, when the row has ended; its search attribute follows. */
  async rowEnd(): Promise<RunEnded | null> {
    const row = await this.db.readRunOutcome({ trackId: this.input.trackId });
    if (row === null || !isTerminal(row.state)) return null;
    this.applied(row.state);
    return { state: row.state as FinalState, exitCode: row.exitCode };
  }

  async refund(usedSeconds: number): Promise<void> {
    if (this.input.metered)
      await this.db.refundUnusedSeconds({ trackId: this.input.trackId, usedSeconds });
  }

  /** The container has ended (or following it failed for good, or its host is lost). */
  containerEnded(): boolean {
    return this.outcome !== null || this.followFailure !== null || this.hostLost !== null;
  }

  /** Whether a control is accepted now, `busy` aside: its from-state, and a container not ended. */
  accepts(action: ControlAction): boolean {
    return CONTROL_FROM_STATES[action].includes(this.state) && !this.containerEnded();
  }

  /** Whether a control may be taken for its handler to decide (once it has seen the launch). */
  mayAccept(action: ControlAction): boolean {
    return (this.launchUnseen && !this.containerEnded()) || this.accepts(action);
  }
}

/** The text of a failure: an activity's own error message rather than Temporal's wrapper. */
export function failureMessage(error: unknown): string {
  if (error instanceof ActivityFailure && error.cause instanceof Error) return error.cause.message;
  return error instanceof Error ? error.message : String(error);
}
