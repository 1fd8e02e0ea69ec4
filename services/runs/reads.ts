import { runsError } from './errors';
import type { PlatformDeps } from '../../platform/deps';
import { listUtilization } from '../../db/runs/utilization';
import {
  findRun,
  isTerminal,
  listEvents,
  listRuns,
  queuePosition,
  readStartEstimateStats,
  type RunEventRow,
  type RunRow,
  type RunState,
} from '../../db/runs/runs';

/** How many of the tenant's latest finished runs feed the soft `estimated_start`. */
export const ESTIMATE_HISTORY_RUNS = 50;

export const runNotFound = () => runsError('run_not_found');

/** The run of this tenant, else 404 (another tenant's run is indistinguishable from none). */
export async function loadRun(
  deps: PlatformDeps,
  tenantId: string,
  trackId: string,
): Promise<RunRow> {
  const run = await findRun(deps.pool, tenantId, trackId);
  if (!run) throw runNotFound();
  return run;
}

export function presentRun(run: RunRow) {
  return {
    track_id: run.track_id,
    tenant_id: run.tenant_id,
    state: run.state,
    reason: run.reason,
    image: run.image,
    command: run.command,
    env: run.env,
    submitted_at: run.submitted_at,
    eligible_start: run.eligible_start,
    scheduled_start: run.scheduled_start,
    expires_at: run.expires_at,
    started_at: run.started_at,
    finished_at: run.finished_at,
    exit_code: run.exit_code,
    container_id: run.container_id,
    worker_id: run.worker_id,
    cpu_limit: Number(run.cpu_limit),
    memory_limit_mb: run.memory_limit_mb,
    timeout_seconds: run.timeout_seconds,
    clamped: run.clamped,
    name: run.name,
    tags: run.tags,
    stdout_file: run.stdout_file,
    stderr_file: run.stderr_file,
    workflow_id: run.workflow_id,
    node_ref: run.node_ref,
  };
}

const presentEvent = (e: RunEventRow) => ({
  event_id: e.event_id,
  event_type: e.event_type,
  ts: e.ts,
  from_state: e.from_state,
  to_state: e.to_state,
  reason: e.reason,
  payload: e.payload,
});

/**
 * The run and its queue position, agreeing: the position is counted after the row was read, so
 * a run dispatched in between counts 0 (itself no longer scheduled). The row read again then
 * shows it moved on (a run never returns to scheduled), with no position.
 */
async function withQueuePosition(deps: PlatformDeps, run: RunRow) {
  const position = await queuePosition(deps.pool, run);
  if (position !== 0) return { run, position };
  const moved = await loadRun(deps, run.tenant_id, run.track_id);
  return { run: moved, position: await queuePosition(deps.pool, moved) };
}

export async function getRunStatus(deps: PlatformDeps, tenantId: string, trackId: string) {
  const read = await loadRun(deps, tenantId, trackId);
  const { run, position } = await withQueuePosition(deps, read);
  // After the row shown: a state's event commits with it, so the events never lag behind it.
  const events = await listEvents(deps.pool, trackId);
  return {
    ...presentRun(run),
    events: events.map(presentEvent),
    scheduling_info: {
      eligible_start: run.eligible_start,
      working_hours_applied: run.working_hours_applied,
      queue_position: position,
      estimated_start: position === null ? null : await estimateStart(deps, run, position),
    },
  };
}

/**
 * A soft estimate for a waiting run: now (or eligible_start) when a slot is free, else
 * now + the tenant's mean run duration (latest finished runs) per full round of slots ahead
 * of it. Null when the tenant has no finished run to learn from.
 */
async function estimateStart(
  deps: PlatformDeps,
  run: RunRow,
  position: number,
): Promise<string | null> {
  const stats = await readStartEstimateStats(deps.pool, run.tenant_id, ESTIMATE_HISTORY_RUNS);
  if (stats.mean_seconds === null) return null;
  const base = Math.max(Date.parse(run.eligible_start), Date.now());
  const rounds = Math.max(0, Math.ceil((stats.busy + position - stats.slots) / stats.slots));
  return new Date(base + rounds * stats.mean_seconds * 1000).toISOString();
}

export async function getRunResult(deps: PlatformDeps, tenantId: string, trackId: string) {
  const run = await loadRun(deps, tenantId, trackId);
  if (!isTerminal(run.state)) throw runsError('not_terminal');
  const started = run.started_at === null ? null : Date.parse(run.started_at);
  const finished = Date.parse(run.finished_at!);
  return {
    track_id: run.track_id,
    exit_code: run.exit_code,
    status: run.state,
    reason: run.reason,
    started_at: run.started_at,
    finished_at: run.finished_at,
    duration_seconds: started === null ? 0 : Math.max(0, finished - started) / 1000,
    stdout_bytes: Number(run.stdout_bytes),
    stderr_bytes: Number(run.stderr_bytes),
    stdout_file: run.stdout_file,
    stderr_file: run.stderr_file,
    result_summary: run.result_summary,
  };
}

export async function listTenantRuns(
  deps: PlatformDeps,
  tenantId: string,
  query: { states: RunState[] | null; tag: string | null; limit: number; offset: number },
) {
  const runs = await listRuns(deps.pool, tenantId, query);
  return { runs: runs.map(presentRun), limit: query.limit, offset: query.offset };
}

/**
 * Postgres timestamps start at year 1: an ISO year 0000 (1 BC), which the document's instants
 * allow, made the query fail (a 500). No sample is that old, so such a bound bounds nothing.
 */
const POSTGRES_INSTANT_MIN_MS = Date.parse('0001-01-01T00:00:00Z');
const beforePostgres = (instant: string | null) =>
  instant !== null && Date.parse(instant) < POSTGRES_INSTANT_MIN_MS;

export async function getUtilization(
  deps: PlatformDeps,
  tenantId: string,
  trackId: string,
  range: { from: string | null; to: string | null },
) {
  await loadRun(deps, tenantId, trackId);
  if (beforePostgres(range.to)) return { samples: [] };
  const from = beforePostgres(range.from) ? null : range.from;
  const rows = await listUtilization(deps.pool, trackId, { from, to: range.to });
  return {
    samples: rows.map((r) => ({
      timestamp: r.timestamp,
      cpu_percent: r.cpu_percent,
      memory_mb: r.memory_mb,
      memory_limit_mb: r.memory_limit_mb,
      net_rx_bytes: Number(r.net_rx_bytes),
      net_tx_bytes: Number(r.net_tx_bytes),
    })),
  };
}
