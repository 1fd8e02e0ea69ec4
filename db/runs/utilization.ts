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

export interface UtilizationRow {
  timestamp: string;
  cpu_percent: number;
  memory_mb: number;
  memory_limit_mb: number;
  net_rx_bytes: string;
  net_tx_bytes: string;
}

/** Samples in [from, to], oldest first, at most UTILIZATION_SAMPLES_MAX. */
export async function listUtilization(
  db: Pick<DatabasePool, 'any'>,
  trackId: string,
  range: { from: string | null; to: string | null },
): Promise<UtilizationRow[]> {
  const conditions = [sql.fragment`track_id = ${trackId}`];
  if (range.from !== null) conditions.push(sql.fragment`ts >= ${range.from}::timestamptz`);
  if (range.to !== null) conditions.push(sql.fragment`ts <= ${range.to}::timestamptz`);
  return (await db.any(sql.unsafe`
    SELECT ts AS timestamp, cpu_percent, memory_mb, memory_limit_mb, net_rx_bytes, net_tx_bytes
    FROM runs.utilization_samples WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY ts LIMIT ${UTILIZATION_SAMPLES_MAX}`)) as unknown as UtilizationRow[];
}
