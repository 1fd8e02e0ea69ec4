// Workflow types of the platform itself, shared by the services.
export { deliveryWorkflow } from './delivery';
