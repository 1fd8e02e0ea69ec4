// Workflow types of the quota service.
export { quotaBootstrapWorkflow } from './bootstrap';
export { quotaJobWorkflow } from './jobs';
export { alertMailWorkflow } from './alert-mail';
