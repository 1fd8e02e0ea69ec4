import { z } from 'zod';
import { sql, type DatabasePool } from '../pool';

/** A host whose row is older than this is taken for dead (three missed refreshes). */
export const DOCKER_HOST_ALIVE_MS = 15_000;

export interface DockerHost {
  anyHostQueue: string;
  workerId: string;
}

/** Says the host is alive now (see runs/0006): inserted on start, refreshed while it runs. */
export async function announceDockerHost(pool: DatabasePool, host: DockerHost): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO runs.docker_hosts (any_host_queue, worker_id) VALUES (${host.anyHostQueue}, ${host.workerId})
    ON CONFLICT (any_host_queue, worker_id) DO UPDATE SET seen_at = now()`);
}

/** A host that stops cleanly withdraws at once instead of being taken for alive a while longer. */
export async function withdrawDockerHost(pool: DatabasePool, host: DockerHost): Promise<void> {
  await pool.query(sql.unsafe`
    DELETE FROM runs.docker_hosts
    WHERE any_host_queue = ${host.anyHostQueue} AND worker_id = ${host.workerId}`);
}

/** SQL: some host of the queue was seen within DOCKER_HOST_ALIVE_MS. */
export const someDockerHostAlive = (anyHostQueue: string) => sql.fragment`EXISTS (
  SELECT 1 FROM runs.docker_hosts
  WHERE any_host_queue = ${anyHostQueue}
    AND seen_at > now() - make_interval(secs => ${DOCKER_HOST_ALIVE_MS / 1000}))`;

const hostSilenceRow = z.object({
  any_host_queue: z.string(),
  worker_id: z.string(),
  silent_seconds: z.number(),
});

/**
 * Seconds since each of these hosts last announced itself (the database's clock), keyed by
 * dockerHostKey; a host with no row (withdrawn on a clean stop, or never seen) is absent.
 */
export async function dockerHostsSilentSeconds(
  pool: DatabasePool,
  hosts: DockerHost[],
): Promise<Map<string, number>> {
  if (hosts.length === 0) return new Map();
  const queues = sql.array(
    hosts.map((h) => h.anyHostQueue),
    'text',
  );
  const workers = sql.array(
    hosts.map((h) => h.workerId),
    'text',
  );
  const rows = await pool.any(sql.type(hostSilenceRow)`
    SELECT any_host_queue, worker_id,
           EXTRACT(EPOCH FROM (clock_timestamp() - seen_at))::float8 AS silent_seconds
    FROM runs.docker_hosts
    WHERE (any_host_queue, worker_id) IN (SELECT * FROM unnest(${queues}, ${workers}))`);
  return new Map(
    rows.map((r) => [
      dockerHostKey({ anyHostQueue: r.any_host_queue, workerId: r.worker_id }),
      r.silent_seconds,
    ]),
  );
}

export const dockerHostKey = (host: DockerHost): string =>
  `${host.anyHostQueue}\u0000${host.workerId}`;

/** Rows of hosts gone for a day (killed, never withdrawn): the retention purge removes them. */
export const DOCKER_HOST_FORGOTTEN_AFTER_DAYS = 1;

export async function purgeGoneDockerHosts(pool: DatabasePool): Promise<void> {
  await pool.query(sql.unsafe`
    DELETE FROM runs.docker_hosts
    WHERE seen_at < now() - make_interval(days => ${DOCKER_HOST_FORGOTTEN_AFTER_DAYS})`);
}
