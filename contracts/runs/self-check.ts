/**
 * What the runs API and the self-check workflow share (workflows/runs/self-check.ts): its id and
 * input. Pure, so the sandboxed bundle and the API both import it.
 */

/** What the workflow and its container activity (activities/runs/self-check.ts) take. */
export interface SelfCheckInput {
  checkId: string;
  /**
   * Where a Docker host claims the check. Carried in the input (so in the history) rather than
   * derived from the workflow's own task queue, which is a fake one during replay.
   */
  dockerAnyHostQueue: string;
  image: string;
  command: string[];
  timeoutSeconds: number;
}

export const selfCheckWorkflowId = (checkId: string): string => `self-check/${checkId}`;
