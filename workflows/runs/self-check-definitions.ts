/**
 * What the runs API and the self-check workflow share (workflows/runs/self-check.ts): its id and
 * input. Pure, so the sandboxed bundle and the API both import it.
 */

/** The input is the container activity's own (a type: nothing of the activities is loaded). */
export type { SelfCheckInput } from '../../activities/runs/self-check';

export const selfCheckWorkflowId = (checkId: string): string => `self-check/${checkId}`;
