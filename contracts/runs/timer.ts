/**
 * What the runs API and the timer workflow share (workflows/runs/timer.ts): id, type and input.
 * Pure, so the sandboxed bundle and the API both import it.
 */

/** One execution per timer: `timer/<timer_id>`. */
export const timerWorkflowId = (timerId: string): string => `timer/${timerId}`;
export const TIMER_WORKFLOW_TYPE = 'timerWorkflow';

export interface TimerWorkflowInput {
  timerId: string;
  tenantId: string;
  /** The instant to fire at, ISO-8601 UTC (the row's, to the millisecond). */
  fireAt: string;
}
