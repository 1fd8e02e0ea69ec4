// Workflow types of the quota service.
export { quotaBootstrapWorkflow } from './bootstrap';
