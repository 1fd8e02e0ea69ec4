// Workflow types of the runs service.
export { selfCheckWorkflow } from './self-check';
export { runWorkflow } from './run';
export { dagWorkflow } from './dag';
export { runsRetentionPurgeWorkflow } from './retention';
export { runsReconcileWorkflow } from './reconcile';
export { timerWorkflow } from './timer';
export { scheduleFireWorkflow } from './schedule-fire';
export { triggerFireWorkflow } from './trigger-fire';
