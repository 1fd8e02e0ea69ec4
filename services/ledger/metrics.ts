import client from 'prom-client';
import type { BatchFlight } from '../../platform/batching';

/**
 * Group commit as operators see it: per database call of a posting batcher, its size, how long
 * its oldest posting waited for it (the tenant's previous call still in flight) and how long it
 * took, commit included. `path` as in ledger_postings_total. Process-wide: every ledger app's
 * batchers observe them, and each app registers them in its registry.
 */
const path = ['path'] as const;
const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
export const postingBatchMetrics = [
  new client.Histogram({
    name: 'ledger_posting_batch_size',
    help: 'Postings per database call of the posting batchers (group commit)',
    labelNames: path,
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [],
  }),
  new client.Histogram({
    name: 'ledger_posting_batch_wait_seconds',
    help: "How long a posting batch's oldest posting waited for its database call",
    labelNames: path,
    buckets: SECONDS,
    registers: [],
  }),
  new client.Histogram({
    name: 'ledger_posting_batch_flight_seconds',
    help: "A posting batch's database call, commit included",
    labelNames: path,
    buckets: SECONDS,
    registers: [],
  }),
] as const;

export function observePostingFlight(
  batchPath: 'one_statement' | 'general',
): (partition: string, flight: BatchFlight) => void {
  const [size, wait, took] = postingBatchMetrics;
  return (_tenant, flight) => {
    size.observe({ path: batchPath }, flight.size);
    wait.observe({ path: batchPath }, flight.waitedMs / 1000);
    took.observe({ path: batchPath }, flight.flightMs / 1000);
  };
}
