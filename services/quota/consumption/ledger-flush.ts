import type { DatabasePool } from '../../../db/pool';
import { appendLedger, type LedgerEntryInput } from '../../../db/quota/consumption';
import {
  deleteFromLedgerStream,
  oldestUnflushedMs,
  readLedgerStream,
} from '../../../db/quota/fast-state';
import { ALL_PARTITIONS } from '../../../db/quota/partitions';
import type { Redis } from '../../../db/redis';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { recordAlerts, type StreamedAlerts } from '../alerts/events';

/**
 * The fast path's ledger entries, moved from the write-ahead stream into Postgres oldest first:
 * each batch is written (an entry already there is left alone) before it leaves the stream, so a
 * flush that dies half-way is simply done again.
 */
type StreamedEntry = Omit<LedgerEntryInput, 'amount'> & { amount: string };

const BATCH_EVENTS = 500;

export async function flushLedgerStream(deps: {
  pool: DatabasePool;
  redis: Redis;
  /** The deployment's: an alert's deliveries are started on its quota queue. */
  taskQueuePrefix: string;
}): Promise<{ flushed_events: number }> {
  let flushed = 0;
  for (const partition of ALL_PARTITIONS) flushed += await flushPartition(deps, partition);
  return { flushed_events: flushed };
}

/** One partition's stream, batch by batch until it is empty. */
async function flushPartition(
  deps: Parameters<typeof flushLedgerStream>[0],
  partition: number,
): Promise<number> {
  const queue = taskQueues(deps.taskQueuePrefix).quota;
  let flushed = 0;
  for (;;) {
    const events = await readLedgerStream(deps.redis, partition, BATCH_EVENTS);
    const entries = events.flatMap((event) =>
      (JSON.parse(event.entries) as StreamedEntry[]).map((e) => ({
        ...e,
        amount: BigInt(e.amount),
      })),
    );
    await appendLedger(deps.pool, entries);
    // A fast consume's alert crossings travel with its entries (each recorded once).
    for (const event of events)
      if (event.alerts) {
        const alerts = JSON.parse(event.alerts) as StreamedAlerts;
        await deps.pool.transaction((tx) => recordAlerts(tx, alerts, queue));
      }
    await deleteFromLedgerStream(
      deps.redis,
      partition,
      events.map((e) => e.id),
    );
    flushed += events.length;
    if (events.length < BATCH_EVENTS) return flushed;
  }
}

/** How long the oldest entry not yet flushed has waited (0 when none waits). */
export async function flushLagSeconds(redis: Redis): Promise<number> {
  const oldest = await oldestUnflushedMs(redis);
  return oldest === null ? 0 : Math.max(0, (Date.now() - oldest) / 1000);
}
