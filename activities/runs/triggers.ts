import { Context } from '@temporalio/activity';
import { ScheduleNotFoundError } from '@temporalio/client';
import { UniqueIntegrityConstraintViolationError } from 'slonik';
import type { Config } from '../../platform/config';
import { DomainError } from '../../platform/errors';
import { taskQueues } from '../../contracts/shared/task-queues';
import { wallTimeOf } from '../../services/runs/schedules/dst';
import { runTemplate } from '../../services/runs/templates/service';
import type { MeteringDeps } from '../../services/runs/metering';
import { openTriggerParams } from '../../services/runs/triggers/params';
import type { DatabasePool } from '../../db/pool';
import { findPrincipalOfKey } from '../../db/runs/tenants';
import {
  disableTrigger,
  findTriggerFire,
  findTriggerOfFire,
  recordTriggerFire,
  workflowOfOccurrence,
  type TriggerDisabledReason,
  type TriggerFireRow,
  type TriggerOccurrence,
  type TriggerRow,
} from '../../db/runs/triggers';
import { clearWorkflowInputs } from '../../db/runs/workflows';
import type { DagWorkflowInput } from '../../contracts/runs/dag';
import { triggerTemporalId } from '../../contracts/runs/trigger-fire';

/** What fireTrigger did for one occurrence. */
export type TriggerFireResult =
  | { outcome: 'launched'; fire: TriggerFireRow; start: DagWorkflowInput | null; taskQueue: string }
  | { outcome: 'already_recorded'; fire: TriggerFireRow }
  | { outcome: 'skipped_disabled'; fire: TriggerFireRow }
  | { outcome: 'failed'; fire: TriggerFireRow; reason: TriggerDisabledReason }
  | { outcome: 'trigger_deleted' };

type Deps = { pool: DatabasePool; config: Config } & MeteringDeps;
type Launch =
  | { workflowId: string; start: DagWorkflowInput | null }
  | { reason: TriggerDisabledReason; detail: string };

/** Why a refusal of the launch disables the trigger; null: not final (the activity retries). */
export function disabledReasonOf(error: DomainError): TriggerDisabledReason | null {
  const code = error.code;
  if (code === 'template_not_found' || code === 'template_version_not_found')
    return 'template_deleted';
  if (code.endsWith('_template_param') || code === 'secret_param_outside_env')
    return 'invalid_params';
  if (code.endsWith('quota_exceeded')) return 'quota_exceeded';
  if (code === 'SERVICE_UNAVAILABLE') return null;
  return 'launch_refused';
}

/**
 * Launches the template as the key that made the trigger, through the run path (its checks,
 * quotas and metering), keyed by the occurrence: a retry after the launch committed finds its
 * workflow. A final refusal answers why; a passing failure is thrown (the activity retries).
 */
async function launch(deps: Deps, trigger: TriggerRow, o: TriggerOccurrence): Promise<Launch> {
  const principal = await findPrincipalOfKey(deps.pool, trigger.key_id);
  if (!principal) return { reason: 'key_revoked', detail: 'key_revoked' };
  let params: Record<string, string>;
  try {
    params = openTriggerParams(deps.config.runs.secretsKey, trigger);
  } catch {
    // No key, or another key than sealed them: nothing a retry mends.
    return { reason: 'launch_refused', detail: 'secret_params_unreadable' };
  }
  let start: DagWorkflowInput | null = null;
  try {
    const accepted = await runTemplate(
      deps,
      { startInBackground: (input) => (start = input) },
      principal,
      trigger.template_id,
      {
        params,
        version: trigger.version ?? undefined,
        tags: [],
        scheduled_start: null,
      },
      { triggerId: trigger.trigger_id, occurrence: o.occurrence },
    );
    return { workflowId: accepted.workflow_id, start };
  } catch (error) {
    if (error instanceof UniqueIntegrityConstraintViolationError) {
      const workflowId = await workflowOfOccurrence(deps.pool, o);
      if (workflowId) return { workflowId, start: null };
    }
    if (!(error instanceof DomainError)) throw error;
    const refusal = error as DomainError<string>;
    const reason = disabledReasonOf(refusal);
    if (reason === null) throw error;
    return { reason, detail: refusal.message };
  }
}

export function createTriggerActivities(deps: Deps) {
  const taskQueue = taskQueues(deps.config.taskQueuePrefix).runs;
  return {
    /**
     * One occurrence of a trigger: recorded once (by occurrence and by wall time, the
     * daylight-saving rule of schedules), and, while the trigger is enabled, its template launched
     * once. A refused launch disables the trigger with its reason and records the fire `failed`
     * with the refusal's detail, in one transaction.
     */
    async fireTrigger(input: {
      triggerId: string;
      tenantId: string;
      cron: string;
      timezone: string;
      occurrence: string;
    }): Promise<TriggerFireResult> {
      const wallTime = wallTimeOf(input.cron, input.timezone, Date.parse(input.occurrence));
      const o = { triggerId: input.triggerId, occurrence: input.occurrence, wallTime };
      const recorded = await findTriggerFire(deps.pool, o);
      if (recorded) return { outcome: 'already_recorded', fire: recorded };
      const trigger = await findTriggerOfFire(deps.pool, input.triggerId);
      if (!trigger) return { outcome: 'trigger_deleted' };
      // A fire of the occurrence that got here first answers for both.
      const settled = async (fire: TriggerFireRow | null, result: TriggerFireResult) =>
        fire
          ? result
          : { outcome: 'already_recorded' as const, fire: (await findTriggerFire(deps.pool, o))! };
      const nothing = { workflowId: null, error: null };
      if (!trigger.enabled) {
        const fire = await recordTriggerFire(deps.pool, {
          ...o,
          ...nothing,
          outcome: 'skipped_disabled',
        });
        return settled(fire, { outcome: 'skipped_disabled', fire: fire! });
      }
      const launched = await launch(deps, trigger, o);
      if ('reason' in launched) {
        const { reason, detail } = launched;
        const fire = await deps.pool.transaction(async (tx) => {
          await disableTrigger(tx, trigger.trigger_id, reason, detail);
          return recordTriggerFire(tx, {
            ...o,
            outcome: 'failed',
            workflowId: null,
            error: detail,
          });
        });
        return settled(fire, { outcome: 'failed', fire: fire!, reason });
      }
      const fire = await recordTriggerFire(deps.pool, {
        ...o,
        ...nothing,
        outcome: 'launched',
        workflowId: launched.workflowId,
      });
      return settled(fire, { outcome: 'launched', fire: fire!, start: launched.start, taskQueue });
    },

    /**
     * Pauses the trigger's Temporal Schedule after a fire disabled it (Temporal's pause on
     * failure does not watch ALLOW_ALL starts), unless the trigger was re-enabled meanwhile.
     */
    async pauseTriggerSchedule(input: { triggerId: string; note: string }): Promise<void> {
      const trigger = await findTriggerOfFire(deps.pool, input.triggerId);
      if (!trigger || trigger.enabled) return;
      try {
        await Context.current()
          .client.schedule.getHandle(triggerTemporalId(input.triggerId))
          .pause(input.note);
      } catch (error) {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
      }
    },

    /** The child dag/<workflow_id> runs: the submit's outbox has nothing left to start. */
    async markDagStarted(workflowId: string): Promise<void> {
      await clearWorkflowInputs(deps.pool, [workflowId]);
    },
  };
}
export type TriggerActivities = ReturnType<typeof createTriggerActivities>;
