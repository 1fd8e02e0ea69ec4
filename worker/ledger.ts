import type { WorkerOptions } from '@temporalio/worker';
import type { WorkerDeps } from './workers';

/** The ledger service's task queues (holds that expire arrive with the ledger service). */
export function ledgerWorkerOptions(_deps: WorkerDeps): Partial<WorkerOptions>[] {
  return [];
}
