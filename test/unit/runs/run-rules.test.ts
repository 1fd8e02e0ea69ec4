import { decodeTime } from 'ulid';
import { imageAllowed, parseImageReference } from '../../../services/runs/image-reference';
import { clampLimits, effectiveLimits, type EffectiveLimits } from '../../../services/runs/limits';
import { cpuPercentOf, memoryMbOf, sampleOf } from '../../../activities/docker/stats';
import { workflowUlid } from '../../../workflows/runs/ids';
import type { TenantQuotasRow } from '../../../db/runs/quotas';

describe('image references', () => {
  it.each([
    [
      '127.0.0.1:5000/busybox:latest',
      { host: '127.0.0.1:5000', repository: 'busybox', tag: 'latest', digest: null },
    ],
    [
      'registry.example.com/team/app:1.2.3',
      { host: 'registry.example.com', repository: 'team/app', tag: '1.2.3', digest: null },
    ],
    [
      `localhost/app@sha256:${'a'.repeat(64)}`,
      { host: 'localhost', repository: 'app', tag: null, digest: `sha256:${'a'.repeat(64)}` },
    ],
  ])('when %s is parsed, then host, path, tag and digest come apart', (reference, expected) => {
    expect(parseImageReference(reference)).toEqual(expected);
  });

  it.each([
    'busybox:latest',
    'library/busybox:1',
    '127.0.0.1:5000/busybox',
    '127.0.0.1:5000/Busybox:1',
    '127.0.0.1:5000/busybox:',
    '127.0.0.1:5000/busy--box:1x/',
    `127.0.0.1:5000/busybox@sha256:${'a'.repeat(31)}`,
    `127.0.0.1:5000/${'a'.repeat(256)}:1`,
    '',
  ])('when %s is parsed, then it is refused', (reference) => {
    expect(parseImageReference(reference)).toBeNull();
  });

  it('when the tag is 128 characters it is accepted; 129, refused', () => {
    expect(parseImageReference(`r.io/a:${'t'.repeat(128)}`)).not.toBeNull();
    expect(parseImageReference(`r.io/a:${'t'.repeat(129)}`)).toBeNull();
  });

  it('when an allowlist names prefixes and exact references, then only those match', () => {
    const list = ['r.io/team/', 'r.io/app:', 'r.io/exact:1'];
    expect(imageAllowed('r.io/team/x:1', list)).toBe(true);
    expect(imageAllowed('r.io/app:2', list)).toBe(true);
    expect(imageAllowed('r.io/exact:1', list)).toBe(true);
    expect(imageAllowed('r.io/exact:2', list)).toBe(false);
    expect(imageAllowed('r.io/teamx/y:1', list)).toBe(false);
    expect(imageAllowed('anything', null)).toBe(true);
  });
});

describe('limits', () => {
  const quotas: TenantQuotasRow = {
    max_concurrent_runs: 5,
    max_daily_runs: 1000,
    max_timeout_seconds: 60,
    max_cpu_cores: '0.5',
    max_memory_mb: 64,
    max_queue_seconds: 3600,
    working_hours_tjp: null,
    retention_days: 30,
    max_nodes_per_workflow: 50,
    max_concurrent_workflows: 10,
    max_webhook_endpoints: 10,
    max_webhook_payload_bytes: 262144,
    max_pending_timers: 1000,
    max_schedules: 100,
    max_triggers: 100,
    max_templates: 100,
  };
  const limits: EffectiveLimits = effectiveLimits(quotas, null);

  it('when a tier is narrower than the tenant, then the tier wins axis by axis', () => {
    const tier = {
      tier: 'free',
      metered: true,
      allowed_images: null,
      memory_limit_mb: 32,
      cpu_cores: '1',
      timeout_seconds: null,
      concurrent_runs: 1,
      daily_runs: null,
      workflow_nodes: null,
      retention_days: 7,
      metered_seconds_per_day: null,
    };
    expect(effectiveLimits(quotas, tier)).toMatchObject({
      memory_limit_mb: 32,
      cpu_cores: 0.5,
      timeout_seconds: 60,
      concurrent_runs: 1,
      retention_days: 7,
    });
  });

  it('when requests are at the maxima they are kept; one past, clamped', () => {
    expect(clampLimits({ timeoutSeconds: 60, cpuLimit: 0.5, memoryLimitMb: 64 }, limits)).toEqual({
      timeoutSeconds: 60,
      cpuLimit: 0.5,
      memoryLimitMb: 64,
      clamped: false,
    });
    expect(
      clampLimits({ timeoutSeconds: 61, cpuLimit: null, memoryLimitMb: null }, limits),
    ).toMatchObject({ timeoutSeconds: 60, clamped: true });
    expect(
      clampLimits({ timeoutSeconds: null, cpuLimit: 0.501, memoryLimitMb: null }, limits),
    ).toMatchObject({ cpuLimit: 0.5, clamped: true });
    expect(
      clampLimits({ timeoutSeconds: null, cpuLimit: null, memoryLimitMb: 65 }, limits),
    ).toMatchObject({ memoryLimitMb: 64, clamped: true });
  });

  it('when nothing is asked, then defaults apply, cut to the maxima without counting as clamped', () => {
    expect(
      clampLimits({ timeoutSeconds: null, cpuLimit: null, memoryLimitMb: null }, limits),
    ).toEqual({ timeoutSeconds: 60, cpuLimit: 0.5, memoryLimitMb: 64, clamped: false });
  });
});

describe('workflow ULIDs', () => {
  it('when made from a time and a random source, then they decode to that time and repeat for the same inputs', () => {
    const seeded = () => {
      let x = 1;
      return () => (x = (x * 16807) % 2147483647) / 2147483647;
    };
    const a = workflowUlid(1_700_000_000_123, seeded());
    expect(a).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(decodeTime(a)).toBe(1_700_000_000_123);
    expect(workflowUlid(1_700_000_000_123, seeded())).toBe(a);
  });
});

describe('docker stats', () => {
  const reading = (total: number, preTotal: number, system: number, preSystem: number) => ({
    read: '2026-11-21T20:00:00.000000001Z',
    cpu_stats: { cpu_usage: { total_usage: total }, system_cpu_usage: system, online_cpus: 4 },
    precpu_stats: { cpu_usage: { total_usage: preTotal }, system_cpu_usage: preSystem },
    memory_stats: { usage: 10 * 1024 * 1024, stats: { cache: 2 * 1024 * 1024 } },
    networks: { eth0: { rx_bytes: 100, tx_bytes: 50 }, eth1: { rx_bytes: 1, tx_bytes: 2 } },
  });

  it('when the container used a quarter of the host CPU time on 4 CPUs, then it is 100 %', () => {
    expect(cpuPercentOf(reading(2_000, 1_000, 8_000, 4_000))).toBe(100);
  });

  it('when the container is frozen (no CPU time passed), then it is 0 %', () => {
    expect(cpuPercentOf(reading(1_000, 1_000, 8_000, 4_000))).toBe(0);
  });

  it('when sampled, then memory excludes the page cache and networks are summed', () => {
    expect(memoryMbOf(reading(0, 0, 0, 0))).toBe(8);
    expect(sampleOf(reading(0, 0, 0, 0))).toMatchObject({ netRxBytes: 101, netTxBytes: 52 });
  });
});
