import {
  code,
  deliverySummary,
  DETAILS_MAX_CHARS,
  escapeMarkdown,
  oneLine,
  SUMMARY_MAX_CHARS,
  type ExecutionSummary,
} from '../../../contracts/shared/summaries';
import {
  commandShown,
  dagSummary,
  reconcileSummary,
  retentionSummary,
  runSummary,
  scheduleFireSummary,
  selfCheckSummary,
  timerSummary,
  triggerFireSummary,
} from '../../../contracts/runs/summaries';
import { holdSummary, holdSweepSummary } from '../../../contracts/ledger/summaries';
import {
  alertMailSummary,
  bootstrapSummary,
  jobSummary,
  recipientDomain,
} from '../../../contracts/quota/summaries';

const SECRET = 'hunter2-s3cr3t-value';
const both = (s: ExecutionSummary) => `${s.staticSummary}\n${s.staticDetails}`;
const bounded = (s: ExecutionSummary) => {
  expect(s.staticSummary.length).toBeLessThanOrEqual(SUMMARY_MAX_CHARS);
  expect(s.staticSummary).not.toContain('\n');
  expect(s.staticDetails.length).toBeLessThanOrEqual(DETAILS_MAX_CHARS);
};

const run = {
  trackId: '01JTRACK',
  tenantId: 'tenant-a',
  image: '127.0.0.1:5000/busybox:1',
  command: ['sh', '-c', `curl -H "Authorization: Bearer ${SECRET}" https://x`],
  env: { API_TOKEN: SECRET, DB_PASSWORD: SECRET },
  cpuLimit: 0.5,
  memoryLimitMb: 256,
  timeoutSeconds: 60,
};

describe('execution summaries', () => {
  it('show a run by image, program and tenant, never an env value or an argument', () => {
    const s = runSummary(run);
    expect(s.staticSummary).toBe('run 127.0.0.1:5000/busybox:1 · sh (+2 args) · tenant tenant-a');
    expect(s.staticDetails).toContain('`API_TOKEN`');
    expect(s.staticDetails).toContain('`DB_PASSWORD`');
    expect(s.staticDetails).toContain('0.5 CPU, 256 MB, 60 s timeout');
    expect(both(s)).not.toContain(SECRET);
    expect(both(s)).not.toContain('Authorization');
    bounded(s);
  });

  it('bound every value however long the input', () => {
    const long = 'x'.repeat(10_000);
    const env = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`${long}${i}`, long]));
    for (const s of [
      runSummary({ ...run, image: long, tenantId: long, command: [long, long], env }),
      dagSummary({ workflowId: long, tenantId: long, name: long, nodeCount: 3 }),
      deliverySummary({
        service: 'runs',
        deliveryId: long,
        tenantId: long,
        endpointId: long,
        eventType: long,
      }),
      holdSummary({
        tenantId: long,
        transactionId: long,
        expiresAtMs: 0,
        legs: Array.from({ length: 100 }, (_, i) => ({
          accountId: `${long}${i}`,
          direction: i % 2 ? ('credit' as const) : ('debit' as const),
          amount: '1.00',
          asset: long,
        })),
      }),
      alertMailSummary({
        mailId: long,
        tenantId: long,
        recipient: `${long}@${long}`,
        ruleId: long,
      }),
      timerSummary({ timerId: long, tenantId: long, fireAt: long }),
      scheduleFireSummary({ scheduleId: long, tenantId: long, cron: long, timezone: long }),
      triggerFireSummary({
        triggerId: long,
        tenantId: long,
        templateId: long,
        cron: long,
        timezone: long,
      }),
      selfCheckSummary({ checkId: long, image: long, command: [long] }),
      bootstrapSummary(long),
      jobSummary(long, 'manual'),
    ])
      bounded(s);
    expect(oneLine('a\n b\t c')).toBe('a b c');
    expect(oneLine('abcdef', 4)).toBe('abc…');
  });

  it('show a command as its program and how many arguments follow', () => {
    expect(commandShown([])).toBe("the image's default command");
    expect(commandShown(['echo'])).toBe('echo');
    expect(commandShown(['echo', SECRET])).toBe('echo (+1 arg)');
  });

  it('show a DAG by name, node count and tenant; its name escaped in markdown', () => {
    const s = dagSummary({
      workflowId: '01JDAG',
      tenantId: 't',
      name: 'etl *nightly*',
      nodeCount: 3,
    });
    expect(s.staticSummary).toBe('DAG "etl *nightly*" · 3 nodes · tenant t');
    expect(s.staticDetails).toContain('etl \\*nightly\\*');
    expect(dagSummary({ workflowId: '01JDAG', tenantId: 't' }).staticSummary).toBe(
      'DAG unnamed · tenant t',
    );
  });

  it('show a hold by amount and asset, accounts and expiry', () => {
    const s = holdSummary({
      tenantId: '11111111-2222-3333-4444-555555555555',
      transactionId: 'tx-1',
      expiresAtMs: Date.parse('2026-11-27T01:00:00Z'),
      legs: [
        {
          accountId: 'aaaaaaaa-0000-0000-0000-000000000001',
          direction: 'debit',
          amount: '12.5',
          asset: 'USD',
        },
        {
          accountId: 'aaaaaaaa-0000-0000-0000-000000000002',
          direction: 'debit',
          amount: '0.25',
          asset: 'USD',
        },
        {
          accountId: 'bbbbbbbb-0000-0000-0000-000000000003',
          direction: 'credit',
          amount: '12.75',
          asset: 'USD',
        },
      ],
    });
    expect(s.staticSummary).toBe(
      'hold 12.75 USD: aaaaaaaa…, aaaaaaaa… → bbbbbbbb… · expires 2026-11-27T01:00:00.000Z · tenant 11111111-222…',
    );
    expect(s.staticDetails).toContain('`aaaaaaaa-0000-0000-0000-000000000001`');
    expect(
      holdSummary({ tenantId: 't', transactionId: 'x', expiresAtMs: 0, legs: null }).staticSummary,
    ).toBe('hold · expires 1970-01-01T00:00:00.000Z · tenant t');
  });

  it('show a delivery by event type and endpoint, never its URL or secret', () => {
    const s = deliverySummary({
      service: 'quota',
      deliveryId: '42',
      tenantId: 't',
      endpointId: 'we_1',
      eventType: 'quota.threshold_crossed',
    });
    expect(s.staticSummary).toBe('webhook quota.threshold_crossed → endpoint we_1 · tenant t');
    expect(s.staticDetails).toContain('its URL and secret are not shown');
  });

  it('show an alert mail by its recipient domain only', () => {
    const s = alertMailSummary({
      mailId: 'm1',
      tenantId: 't',
      recipient: 'jane.doe@example.com',
      ruleId: 'r1',
    });
    expect(s.staticSummary).toBe('alert mail to @example.com · rule r1 · tenant t');
    expect(both(s)).not.toContain('jane.doe');
    expect(recipientDomain('no-at-sign')).toBe('(unknown)');
  });

  it('give the platform executions one line each', () => {
    expect(
      timerSummary({ timerId: 'tm', tenantId: 't', fireAt: '2026-11-27T01:00:00.000Z' })
        .staticSummary,
    ).toBe('timer fires at 2026-11-27T01:00:00.000Z · tenant t');
    expect(
      triggerFireSummary({
        triggerId: 'tr',
        tenantId: 't',
        templateId: 'tp',
        cron: '0 * * * *',
        timezone: 'UTC',
      }).staticDetails,
    ).toContain('not shown');
    for (const s of [
      retentionSummary(),
      reconcileSummary(),
      holdSweepSummary(),
      jobSummary('ledger-flush', 'schedule'),
    ])
      expect(s.staticSummary.length).toBeGreaterThan(5);
    expect(code('a`b')).toBe("`a'b`");
    expect(escapeMarkdown('[x](y)')).toBe('\\[x\\]\\(y\\)');
  });
});
