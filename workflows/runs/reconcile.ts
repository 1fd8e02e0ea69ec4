import {
  ActivityFailure,
  getExternalWorkflowHandle,
  patched,
  proxyActivities,
} from '@temporalio/workflow';
import type {
  LostHostRun,
  ReconcileActivities,
  ReconcileOutcome,
  StaleRun,
} from '../../activities/runs/reconcile';
import type { RunDockerActivities } from '../../activities/runs/run-docker';
import { dockerCallProfile, postgresProfile } from '../shared/activity-profiles';
import { hostLostSignal, runWorkflowId } from '../../contracts/runs/run';
import { workflowUlid } from './ids';
import type { ReconcileReason } from '../../contracts/runs/reconcile';

/** Stale runs repaired per pass at most (the rest wait for the next pass). */
export const RECONCILE_BATCH_SIZE = 50;
/** Active rows read (and their workflows described) per activity call. */
export const RECONCILE_SCAN_PAGE = 200;
/** Pages per pass, so one pass is bounded even with a very large number of active runs. */
export const RECONCILE_SCAN_PAGES_MAX = 25;
/**
 * A workflow closed less than this long ago is left for the next pass: an activity it had in
 * flight (a launch on its host, a finishRun) keeps running after the workflow closed, and may
 * still record the run's real end or create its container.
 */
export const RECONCILE_CLOSED_GRACE_SECONDS = 60;
/**
 * A run whose workflow does not exist (deleted history, namespace retention) is repaired only
 * once its row has not changed for this long. Rows whose start is not confirmed yet
 * (workflow_input set) are never considered: they belong to the start sweeper.
 */
export const RECONCILE_MISSING_GRACE_SECONDS = 300;
/**
 * A running or paused run's host silent for longer than this is taken for lost, and the run
 * told so (it ends failed, host_lost). A worker restart takes seconds; a host that has not
 * announced itself for three minutes is down (about 36 missed refreshes).
 */
export const RECONCILE_HOST_LOST_GRACE_SECONDS = 180;
const HOST_LOST_PATCH = 'reconcile-host-lost';

export interface ReconcileInput {
  /** Defaults are the constants above; tests pass 0 graces. */
  batchSize?: number;
  closedGraceSeconds?: number;
  missingGraceSeconds?: number;
  hostLostGraceSeconds?: number;
  /** Only this tenant's runs (an operator repairing one tenant; tests). */
  tenantId?: string | null;
}

export interface ReconcileResult {
  scanned: number;
  repaired: {
    trackId: string;
    reason: ReconcileReason;
    outcome: ReconcileOutcome;
    container: 'removed' | 'none' | 'host_unreachable' | 'failed';
  }[];
  /** Runs told their host is lost (each then ends itself, failed host_lost). */
  hostLost?: LostHostRun[];
}

const db = proxyActivities<ReconcileActivities>({
  ...postgresProfile,
  // A page describes up to RECONCILE_SCAN_PAGE workflows.
  startToCloseTimeout: '2 minutes',
});

/**
 * Repairs runs whose row is active but whose workflow `run/<track_id>` is closed (terminated,
 * failed, timed out, cancelled by an operator, or completed without recording an end) or
 * gone: each is failed through transitionRun (row + event, one transaction, conditional on the
 * state read, so a workflow or a second reconciler that got there first wins), its slot's
 * waiting runs are woken, a metered charge refunded, and its container removed on its host.
 * A run whose workflow is running (after a reset, the new run continues it) is never touched.
 * Started by the schedule `schedule/runs-reconcile`; operators see each pass in the Web UI.
 */
export async function runsReconcileWorkflow(input: ReconcileInput = {}): Promise<ReconcileResult> {
  const batchSize = input.batchSize ?? RECONCILE_BATCH_SIZE;
  const stale: StaleRun[] = [];
  const onLostHosts: LostHostRun[] = [];
  let scanned = 0;
  let after = '';
  for (let page = 0; page < RECONCILE_SCAN_PAGES_MAX && stale.length < batchSize; page++) {
    const found = await db.findStaleRuns({
      afterTrackId: after,
      limit: RECONCILE_SCAN_PAGE,
      closedGraceSeconds: input.closedGraceSeconds ?? RECONCILE_CLOSED_GRACE_SECONDS,
      missingGraceSeconds: input.missingGraceSeconds ?? RECONCILE_MISSING_GRACE_SECONDS,
      hostLostGraceSeconds: input.hostLostGraceSeconds ?? RECONCILE_HOST_LOST_GRACE_SECONDS,
      tenantId: input.tenantId ?? null,
    });
    scanned += found.scanned;
    onLostHosts.push(...(found.onLostHosts ?? []));
    stale.push(...found.stale.slice(0, batchSize - stale.length));
    if (found.nextAfterTrackId === null) break;
    after = found.nextAfterTrackId;
  }
  const repaired = await Promise.all(stale.map((run) => repair(run)));
  const result = { scanned, repaired: repaired.filter((r) => r !== null) };
  if (!patched(HOST_LOST_PATCH)) return result;
  return { ...result, hostLost: await tellHostLost(onLostHosts) };
}

/** Signals each run its host is lost; a run that has ended meanwhile is left out. */
async function tellHostLost(runs: LostHostRun[]): Promise<LostHostRun[]> {
  const told = await Promise.all(
    runs.map((run) =>
      getExternalWorkflowHandle(runWorkflowId(run.trackId))
        .signal(hostLostSignal, { workerId: run.workerId, silentSeconds: run.silentSeconds })
        .then(
          () => run,
          () => null,
        ),
    ),
  );
  return told.filter((run) => run !== null);
}

async function repair(run: StaleRun): Promise<ReconcileResult['repaired'][number] | null> {
  const outcome = await db.failStaleRun({ run, eventId: workflowUlid() });
  // conflict: the row moved on (the workflow recorded its end, or another reconciler did);
  // still_open: the workflow is running again (an operator reset it). Neither is ours.
  if (outcome !== 'applied' && outcome !== 'already_applied') return null;
  let container: ReconcileResult['repaired'][number]['container'] = 'none';
  if (run.hostQueue === null) {
    container = run.workerId === null ? 'none' : 'host_unreachable';
  } else {
    const host = proxyActivities<RunDockerActivities>({
      ...dockerCallProfile,
      // A host that died after the poller check: give up instead of holding the pass.
      scheduleToCloseTimeout: '2 minutes',
      taskQueue: run.hostQueue,
    });
    try {
      await host.removeRunContainer({ trackId: run.trackId });
      container = 'removed';
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      container = 'failed';
    }
  }
  return { trackId: run.trackId, reason: run.reason, outcome, container };
}
