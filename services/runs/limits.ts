import type { TenantQuotasRow } from '../../db/runs/quotas';
import type { TierRow } from '../../db/runs/tenants';

/** What a run gets when it asks for nothing (then clamped to the tenant's maxima). */
export const DEFAULT_TIMEOUT_SECONDS = 600;
export const DEFAULT_CPU_LIMIT_CORES = 1;
export const DEFAULT_MEMORY_LIMIT_MB = 256;

/** The limits that bind a key: the tenant's quotas, narrowed by the key's tier if it has one. */
export interface EffectiveLimits {
  memory_limit_mb: number;
  cpu_cores: number;
  timeout_seconds: number;
  concurrent_runs: number;
  daily_runs: number;
  workflow_nodes: number;
  retention_days: number;
}

const narrower = (quota: number, tier: string | number | null | undefined): number =>
  tier === null || tier === undefined ? quota : Math.min(quota, Number(tier));

export function effectiveLimits(quotas: TenantQuotasRow, tier: TierRow | null): EffectiveLimits {
  return {
    memory_limit_mb: narrower(quotas.max_memory_mb, tier?.memory_limit_mb),
    cpu_cores: narrower(Number(quotas.max_cpu_cores), tier?.cpu_cores),
    timeout_seconds: narrower(quotas.max_timeout_seconds, tier?.timeout_seconds),
    concurrent_runs: narrower(quotas.max_concurrent_runs, tier?.concurrent_runs),
    daily_runs: narrower(quotas.max_daily_runs, tier?.daily_runs),
    workflow_nodes: narrower(quotas.max_nodes_per_workflow, tier?.workflow_nodes),
    retention_days: narrower(quotas.retention_days, tier?.retention_days),
  };
}

export interface RequestedLimits {
  timeoutSeconds: number | null;
  cpuLimit: number | null;
  memoryLimitMb: number | null;
}

/** Fills defaults and clamps each request to its maximum; `clamped` says a request was cut. */
export function clampLimits(requested: RequestedLimits, limits: EffectiveLimits) {
  const pick = (asked: number | null, fallback: number, max: number) =>
    asked === null
      ? { value: Math.min(fallback, max), cut: false }
      : { value: Math.min(asked, max), cut: asked > max };
  const timeout = pick(requested.timeoutSeconds, DEFAULT_TIMEOUT_SECONDS, limits.timeout_seconds);
  const cpu = pick(requested.cpuLimit, DEFAULT_CPU_LIMIT_CORES, limits.cpu_cores);
  const memory = pick(requested.memoryLimitMb, DEFAULT_MEMORY_LIMIT_MB, limits.memory_limit_mb);
  return {
    timeoutSeconds: timeout.value,
    cpuLimit: Math.round(cpu.value * 1000) / 1000,
    memoryLimitMb: memory.value,
    clamped: timeout.cut || cpu.cut || memory.cut,
  };
}
