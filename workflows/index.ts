// Every workflow type the platform runs, bundled once for all workers.
export { selfCheckWorkflow } from './runs/self-check';
