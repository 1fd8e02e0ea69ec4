/**
 * What the runs API, the trigger activities and the trigger fire workflow share
 * (workflows/runs/trigger-fire.ts): ids, type and input. Pure, so the sandboxed bundle, the
 * activities and the API all import it.
 */

/** One Temporal Schedule per template trigger: `trigger/<trigger_id>`. */
export const triggerTemporalId = (triggerId: string): string => `trigger/${triggerId}`;
/** Temporal appends the occurrence: `trigger-fire/<trigger_id>-<occurrence, RFC 3339 UTC>`. */
export const triggerFireWorkflowIdBase = (triggerId: string): string => `trigger-fire/${triggerId}`;
export const TRIGGER_FIRE_WORKFLOW_TYPE = 'triggerFireWorkflow';

export interface TriggerFireWorkflowInput {
  triggerId: string;
  tenantId: string;
  /** The trigger's cron and zone when the action was set: they name the occurrence's wall time. */
  cron: string;
  timezone: string;
}
