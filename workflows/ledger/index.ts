// Workflow types of the ledger service.
export { ledgerHoldWorkflow, ledgerHoldSweepWorkflow } from './hold';
