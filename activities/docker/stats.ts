/** One reading of `docker stats` (API 1.41, cgroup v1 or v2), as much of it as we use. */
export interface DockerStats {
  read: string;
  cpu_stats?: {
    cpu_usage?: { total_usage?: number; percpu_usage?: number[] };
    system_cpu_usage?: number;
    online_cpus?: number;
  };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
  networks?: Record<string, { rx_bytes?: number; tx_bytes?: number }>;
}

export interface UtilizationSample {
  timestamp: string;
  cpuPercent: number;
  memoryMb: number;
  netRxBytes: number;
  netTxBytes: number;
}

/**
 * Docker CLI's formula: container CPU time delta over host CPU time delta, times the CPUs
 * online, as a percentage of one core. A frozen (paused) container has a zero delta: 0 %.
 */
export function cpuPercentOf(stats: DockerStats): number {
  const cpu = stats.cpu_stats;
  const pre = stats.precpu_stats;
  const cpuDelta = (cpu?.cpu_usage?.total_usage ?? 0) - (pre?.cpu_usage?.total_usage ?? 0);
  const systemDelta = (cpu?.system_cpu_usage ?? 0) - (pre?.system_cpu_usage ?? 0);
  if (cpuDelta <= 0 || systemDelta <= 0 || !pre?.cpu_usage?.total_usage) return 0;
  const cpus = cpu?.online_cpus ?? cpu?.cpu_usage?.percpu_usage?.length ?? 1;
  return Math.round((cpuDelta / systemDelta) * cpus * 100 * 1000) / 1000;
}

/** Memory in use without the page cache (cgroup v1 "cache", v2 "inactive_file"), in MiB. */
export function memoryMbOf(stats: DockerStats): number {
  const usage = stats.memory_stats?.usage ?? 0;
  const cache =
    stats.memory_stats?.stats?.total_inactive_file ??
    stats.memory_stats?.stats?.inactive_file ??
    stats.memory_stats?.stats?.cache ??
    0;
  return Math.round((Math.max(0, usage - cache) / (1024 * 1024)) * 1000) / 1000;
}

export function sampleOf(stats: DockerStats): UtilizationSample {
  let rx = 0;
  let tx = 0;
  for (const net of Object.values(stats.networks ?? {})) {
    rx += net.rx_bytes ?? 0;
    tx += net.tx_bytes ?? 0;
  }
  return {
    timestamp: stats.read,
    cpuPercent: cpuPercentOf(stats),
    memoryMb: memoryMbOf(stats),
    netRxBytes: rx,
    netTxBytes: tx,
  };
}
