import Joi from 'joi';
import type { PlatformDeps } from '../../platform/deps';
import { insertAudit, listAudit } from '../../db/runs/audit';
import { findQuotas, QUOTA_FIELDS, updateQuotas, type TenantQuotasRow } from '../../db/runs/quotas';
import { countActiveRuns, submissionsToday, waitingHeads } from '../../db/runs/runs';
import { meteringRefusal, type MeteringDeps } from './metering';
import { runWorkflowId, slotFreedSignal } from '../../contracts/runs/run';
import type { KeyPrincipal } from '../../db/runs/tenants';
import { effectiveLimits } from './limits';
import { runsError } from './errors';
import { WORKING_HOURS_MAX_BYTES, nextWorkingInstant, parseWorkingHours } from './working-hours';

/**
 * A working-hours definition must parse and contain some working time; else 422 with the
 * parser's line/column message (`invalid_shift_definition: line 2, column 5: ...`).
 */
export function assertWorkingHours(text: string): void {
  let hours;
  try {
    hours = parseWorkingHours(text);
  } catch (error) {
    throw runsError('invalid_shift_definition', {
      message: `invalid_shift_definition: ${(error as Error).message}`,
    });
  }
  if (nextWorkingInstant(hours, new Date()) === null) {
    throw runsError('invalid_shift_definition', {
      message: 'invalid_shift_definition: no working time',
    });
  }
}

export const INT_MAX = 2_147_483_647;
export const CPU_CORES_MAX = 10_000;
/** Docker's CPU resolution (as a run's cpu_limit): a quota is kept to it. */
export const CPU_CORES_MIN = 0.001;
const CPU_CORES_DECIMALS = 3;
export const RETENTION_DAYS_MAX = 36_500;

const count = (min: number, startsAt: number) =>
  Joi.number().integer().min(min).max(INT_MAX).description(`a new tenant starts at ${startsAt}`);

/**
 * Each tenant quota's rule, once: the PUT body (partial), the GET answer and the OpenAPI
 * document's TenantQuotas all derive from it; db/runs/quotas.ts keeps the stored column list
 * (a type check holds the two to the same names).
 */
const QUOTA_RULES = {
  max_concurrent_runs: count(1, 5),
  max_daily_runs: count(0, 1000),
  max_timeout_seconds: count(1, 3600),
  // Bounds first, then rounding: joi's precision() rounded before max() (10000.0001 passed) and
  // let 0.0004 round to 0 (refused as not greater than 0, which the document allowed).
  max_cpu_cores: Joi.number()
    .min(CPU_CORES_MIN)
    .max(CPU_CORES_MAX)
    .custom((cores: number) => Number(cores.toFixed(CPU_CORES_DECIMALS)))
    .description('cores, kept to 0.001 (a value between is rounded); a new tenant starts at 2'),
  max_memory_mb: count(6, 2048),
  max_queue_seconds: count(1, 3600),
  working_hours_tjp: Joi.string()
    .max(WORKING_HOURS_MAX_BYTES)
    .allow(null)
    .description(
      'TaskJuggler workinghours/timezone/shift syntax; applied at submit (eligible_start = first working instant at or after the requested start); a new tenant has none',
    ),
  retention_days: Joi.number()
    .integer()
    .min(1)
    .max(RETENTION_DAYS_MAX)
    .description(
      'terminal runs older than this (by finished_at) are purged hourly by schedule/runs-retention-purge; a new tenant starts at 30',
    ),
  max_nodes_per_workflow: count(1, 50),
  max_concurrent_workflows: count(1, 10),
  max_webhook_endpoints: count(0, 10),
  max_webhook_payload_bytes: Joi.number()
    .integer()
    .min(1024)
    .max(INT_MAX)
    .description('a new tenant starts at 262144'),
  max_pending_timers: count(0, 1000).description(
    'timers the tenant may hold pending (fired and cancelled ones are not counted); past it 429 timer_quota_exceeded; a new tenant starts at 1000',
  ),
  max_schedules: count(0, 100).description(
    'schedules the tenant may hold enabled (disabled ones are not counted); past it 429 schedule_quota_exceeded; a new tenant starts at 100',
  ),
  max_triggers: count(0, 100).description(
    'template triggers the tenant may hold enabled (disabled ones are not counted); past it 429 trigger_quota_exceeded; a new tenant starts at 100',
  ),
  max_templates: count(0, 100).description(
    'templates the tenant may hold (not deleted); past it 429 template_quota_exceeded; a new tenant starts at 100',
  ),
} satisfies Record<(typeof QUOTA_FIELDS)[number], Joi.Schema>;

/** PUT /tenant/quotas: a partial body; at least one field; unknown fields are refused (422). */
export const QUOTA_BODY = Joi.object(QUOTA_RULES).min(1).required();
/** GET /tenant/quotas: every quota. */
export const TENANT_QUOTAS = Joi.object(QUOTA_RULES).prefs({ presence: 'required' });

export function presentQuotas(row: TenantQuotasRow) {
  return { ...row, max_cpu_cores: Number(row.max_cpu_cores) };
}

export async function getQuotas(deps: PlatformDeps, principal: KeyPrincipal) {
  return presentQuotas(await findQuotas(deps.pool, principal.tenantId));
}

/** Applies the fields given, audits the change (before and after), returns every field. */
export async function putQuotas(
  deps: PlatformDeps,
  principal: KeyPrincipal,
  changes: Record<string, unknown>,
) {
  if (typeof changes.working_hours_tjp === 'string') assertWorkingHours(changes.working_hours_tjp);
  const updated = await deps.pool.transaction(async (tx) => {
    const before = await findQuotas(tx, principal.tenantId);
    const after = await updateQuotas(tx, principal.tenantId, changes);
    await insertAudit(tx, {
      tenantId: principal.tenantId,
      actor: principal.keyId,
      action: 'tenant.quotas.update',
      outcome: 'ok',
      detail: { changes, before: presentQuotas(before) },
    });
    return { before, after };
  });
  // More slots: wake the runs waiting for one now, not at their fallback poll (best effort).
  if (updated.after.max_concurrent_runs > updated.before.max_concurrent_runs)
    void wakeWaiting(deps, principal.tenantId);
  return presentQuotas(updated.after);
}

async function wakeWaiting(deps: PlatformDeps, tenantId: string): Promise<void> {
  try {
    const heads = await waitingHeads(deps.pool, tenantId, null);
    await Promise.all(
      heads.map((trackId) =>
        deps.temporal.workflow
          .getHandle(runWorkflowId(trackId))
          .signal(slotFreedSignal)
          .catch(() => undefined),
      ),
    );
  } catch (error) {
    deps.logger.warn({ err: (error as Error).message }, 'waking waiting runs failed');
  }
}

const nextUtcMidnight = (): string => {
  const now = new Date();
  return new Date(
    Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1),
  ).toISOString();
};

/**
 * The key's view of its limits and what it has used: daily runs, concurrent runs, the request
 * rate limit (`used` null: the window is a rate, not a counter), and on a metered key the run
 * seconds of its day in the quota service. `metered`: its runs are charged (a metered tier,
 * and metering on).
 */
export async function getUsage(deps: PlatformDeps & MeteringDeps, principal: KeyPrincipal) {
  const limits = effectiveLimits(await findQuotas(deps.pool, principal.tenantId), principal.tier);
  return {
    tier: principal.tier?.tier ?? null,
    metered: (principal.tier?.metered ?? false) && deps.metering !== null,
    limits: {
      memory_limit_mb: limits.memory_limit_mb,
      cpu_cores: limits.cpu_cores,
      timeout_seconds: limits.timeout_seconds,
      concurrent_runs: limits.concurrent_runs,
      daily_runs: limits.daily_runs,
      workflow_nodes: limits.workflow_nodes,
      retention_days: limits.retention_days,
    },
    allowed_images: principal.tier?.allowed_images ?? null,
    expires_at: principal.expiresAt,
    usage: await usagePolicies(deps, principal, limits),
  };
}

interface PolicyUsage {
  policy: string;
  used: number | null;
  limit: number;
  remaining: number;
  resets_at: string | null;
}

/** A counted policy: what is left of `limit` after `used`. */
const counted = (policy: string, used: number, limit: number, resetsAt: string | null) => ({
  policy,
  used,
  limit,
  remaining: Math.max(0, limit - used),
  resets_at: resetsAt,
});

async function usagePolicies(
  deps: PlatformDeps & MeteringDeps,
  principal: KeyPrincipal,
  limits: ReturnType<typeof effectiveLimits>,
): Promise<PolicyUsage[]> {
  const [today, active, ttl, rateLeft] = await Promise.all([
    submissionsToday(deps.pool, principal.tenantId),
    countActiveRuns(deps.pool, principal.tenantId),
    deps.redis.pttl(`rate:${principal.tenantId}`),
    rateRemaining(deps, principal.tenantId),
  ]);
  const windowMs = ttl > 0 ? ttl : deps.config.runs.rateLimitWindowSeconds * 1000;
  const usage: PolicyUsage[] = [
    counted('daily_runs', today, limits.daily_runs, nextUtcMidnight()),
    counted('concurrent_runs', active, limits.concurrent_runs, null),
    {
      policy: 'request_rate',
      used: null,
      limit: deps.config.runs.rateLimitRequests,
      remaining: rateLeft,
      resets_at: new Date(Date.now() + windowMs).toISOString(),
    },
  ];
  const metered = principal.tier?.metered ? await meteredUsage(deps, principal) : null;
  if (metered) usage.push(metered);
  return usage;
}

/**
 * A metered key's run seconds today, as its tier's policy in the quota service counts them
 * (reservations of runs not ended at their full timeout, ended runs at what they used); none
 * while metering is off or the key has no plan there yet.
 */
async function meteredUsage(deps: MeteringDeps, principal: KeyPrincipal) {
  return deps.metering ? deps.metering.usage(principal).catch(meteringRefusal) : null;
}

async function rateRemaining(deps: PlatformDeps, tenantId: string): Promise<number> {
  const used = Number((await deps.redis.get(`rate:${tenantId}`)) ?? '0');
  return Math.max(0, deps.config.runs.rateLimitRequests - used);
}

export async function listAuditRecords(
  deps: PlatformDeps,
  principal: KeyPrincipal,
  page: { limit: number; offset: number },
) {
  const records = await listAudit(deps.pool, principal.tenantId, page);
  return { records, limit: page.limit, offset: page.offset };
}
