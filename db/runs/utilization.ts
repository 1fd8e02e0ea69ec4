import { z } from 'zod';
import { sql, type DatabasePool } from '../pool';

export const UTILIZATION_SAMPLES_MAX = 10_000;

export async function insertUtilizationSample(
  db: Pick<DatabasePool, 'query'>,
  trackId: string,
  memoryLimitMb: number,
  sample: {
    timestamp: string;
    cpuPercent: number;
    memoryMb: number;
    netRxBytes: number;
    netTxBytes: number;
  },
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO runs.utilization_samples (track_id, ts, cpu_percent, memory_mb, memory_limit_mb, net_rx_bytes, net_tx_bytes)
    VALUES (${trackId}, date_trunc('milliseconds', ${sample.timestamp}::timestamptz), ${sample.cpuPercent},
            ${sample.memoryMb}, ${memoryLimitMb}, ${sample.netRxBytes}, ${sample.netTxBytes})
    ON CONFLICT DO NOTHING`);
}

export const utilizationRow = z.object({
  timestamp: z.string(),
  cpu_percent: z.number(),
  memory_mb: z.number(),
  memory_limit_mb: z.number(),
  /** bigint: a decimal string. */
  net_rx_bytes: z.string(),
  net_tx_bytes: z.string(),
});
export type UtilizationRow = z.infer<typeof utilizationRow>;

/** Samples in [from, to], oldest first, at most UTILIZATION_SAMPLES_MAX. */
export async function listUtilization(
  db: Pick<DatabasePool, 'any'>,
  trackId: string,
  range: { from: string | null; to: string | null },
): Promise<readonly UtilizationRow[]> {
  const conditions = [sql.fragment`track_id = ${trackId}`];
  if (range.from !== null) conditions.push(sql.fragment`ts >= ${range.from}::timestamptz`);
  if (range.to !== null) conditions.push(sql.fragment`ts <= ${range.to}::timestamptz`);
  return db.any(sql.type(utilizationRow)`
    SELECT ts AS timestamp, cpu_percent, memory_mb, memory_limit_mb, net_rx_bytes, net_tx_bytes
    FROM runs.utilization_samples WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY ts LIMIT ${UTILIZATION_SAMPLES_MAX}`);
}
