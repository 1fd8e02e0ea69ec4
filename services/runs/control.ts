import path from 'node:path';
import fs from 'node:fs/promises';
import {
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcDeadlineError,
} from '@temporalio/client';
import { RUNS_ERRORS, runsError } from './errors';
import type { PlatformDeps } from '../../platform/deps';
import { isCatalogueCode } from '../../platform/errors';
import { auditOf } from './audit';
import { deleteRunRow, isTerminal } from '../../db/runs/runs';
import type { KeyPrincipal } from '../../db/runs/tenants';
import {
  CONFLICT_MESSAGES,
  CONTROL_FROM_STATES,
  controlUpdates,
  runWorkflowId,
  type ControlAction,
} from '../../contracts/runs/run';
import { loadRun } from './reads';
import { logCacheKeys } from './logs';
import { logIndexPath } from './log-file';

/**
 * Pause, resume, stop or kill, decided by the run's workflow: its update validator refuses a
 * wrong state, and the workflow accepts one control at a time, so two racing calls cannot
 * both win. A run whose workflow has finished is terminal: 409 as well.
 */
export async function controlRun(
  deps: PlatformDeps,
  principal: KeyPrincipal,
  trackId: string,
  action: ControlAction,
) {
  await loadRun(deps, principal.tenantId, trackId);
  const handle = deps.temporal.workflow.getHandle(runWorkflowId(trackId));
  const deadline = Date.now() + CONTROL_CATCH_UP_MS;
  for (;;) {
    try {
      await deps.temporal.withDeadline(Date.now() + CONTROL_ANSWER_TIMEOUT_MS, () =>
        handle.executeUpdate(controlUpdates[action]),
      );
      break;
    } catch (error) {
      // Past the deadline the client answers DEADLINE_EXCEEDED, or CANCELLED as this wrapper.
      if (isGrpcDeadlineError(error) || error instanceof WorkflowUpdateRPCTimeoutOrCancelledError)
        throw workflowUnavailable(error);
      const conflict = conflictOf(error, action);
      if (conflict === null) throw error;
      // The row can be one workflow task ahead of the workflow: the activity that recorded
      // `running` (or `paused`) has committed, and the workflow learns of it on its next task.
      // A control the row allows is retried briefly instead of refused.
      const row = await loadRun(deps, principal.tenantId, trackId);
      if (CONTROL_FROM_STATES[action].includes(row.state) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, CONTROL_RETRY_MS));
        continue;
      }
      throw runsError(isCatalogueCode(RUNS_ERRORS, conflict) ? conflict : 'conflict', {
        message: conflict,
        cause: error,
      });
    }
  }
  await audit(deps.pool, principal, action, trackId);
}

/**
 * How long a control waits for the run's workflow to take it. Past it (its worker is down or
 * busy) the answer is 503 workflow_unavailable with Retry-After: the control may still be
 * carried out once the workflow runs, so a client reads the run before it retries.
 */
export const CONTROL_ANSWER_TIMEOUT_MS = 5_000;
const workflowUnavailable = (cause: unknown) =>
  runsError('workflow_unavailable', { retryAfterSeconds: 1, cause });

/** How long a control the row allows may wait for the workflow to catch up (see controlRun). */
export const CONTROL_CATCH_UP_MS = 3_000;
const CONTROL_RETRY_MS = 100;

function conflictOf(error: unknown, action: ControlAction): string | null {
  if (error instanceof WorkflowUpdateFailedError) {
    const message = error.cause?.message ?? 'conflict';
    return /^[a-z_]+$/.test(message) ? message : 'conflict';
  }
  // A finished execution: the run is terminal, so it is in the wrong state for any control.
  if (error instanceof WorkflowNotFoundError) return CONFLICT_MESSAGES[action];
  if (error instanceof Error && /already completed/i.test(error.message))
    return CONFLICT_MESSAGES[action];
  return null;
}

/**
 * DELETE: a terminal run is removed with everything recorded about it (events, samples, log
 * files, log cache); its usage ledger rows stay (they are billing records). An active run is
 * refused with 409 `not_terminal`: stop or kill it first, so a delete never races a container.
 */
export async function deleteRun(deps: PlatformDeps, principal: KeyPrincipal, trackId: string) {
  const run = await loadRun(deps, principal.tenantId, trackId);
  if (!isTerminal(run.state)) {
    throw runsError('not_terminal');
  }
  await deleteRunRow(deps.pool, principal.tenantId, trackId);
  await Promise.all(
    logFilesOf(run)
      .flatMap((f) => [f, logIndexPath(f)])
      .map((f) => fs.rm(f, { force: true })),
  );
  await deps.redis.del(...logCacheKeys(trackId));
  await audit(deps.pool, principal, 'delete', trackId);
}

/**
 * A run's log files in file mode: the two the row names, and the interleaved `both` stream the
 * capture writes beside them (log-store.ts), which the row does not name.
 */
function logFilesOf(run: {
  track_id: string;
  stdout_file: string | null;
  stderr_file: string | null;
}) {
  const named = [run.stdout_file, run.stderr_file].filter((f): f is string => f !== null);
  const both =
    run.stdout_file && path.join(path.dirname(run.stdout_file), `${run.track_id}.both.log`);
  return both ? [...named, both] : named;
}

const audit = auditOf('run');
