import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ulid } from 'ulid';
import { v4 as uuidv4 } from 'uuid';
import { sql } from '../../../db/pool';
import { eventually } from '../../support/services';
import { runAdmin } from '../../../cli/runs';
import {
  IMAGE,
  client,
  config,
  newTenant,
  quotaRecords,
  startHarness,
  type Harness,
} from './support';
import { createTemporalClient } from '../../../platform/temporal';
import { payloadValues } from '../../support/payload-keys';

const exec = promisify(execFile);
const ADMIN = path.resolve(__dirname, '../../../scripts/runs-admin');

describe('runs API: authentication, submit rules, quotas, usage, audit', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  describe('operator CLI and bearer keys', () => {
    it('when an operator creates a tenant and a key with --json, then the key authenticates and holds exactly the permissions given', async () => {
      const tenantId = `t-cli-${ulid().toLowerCase()}`;
      const env = { ...process.env };
      const tenant = await exec(ADMIN, ['tenant', 'create', tenantId, '--json'], { env });
      expect(JSON.parse(tenant.stdout)).toEqual({ tenant_id: tenantId, created: true });
      const created = await exec(
        ADMIN,
        ['key', 'create', '--tenant', tenantId, '--permissions', 'svc_run_read', '--json'],
        { env },
      );
      const key = JSON.parse(created.stdout) as {
        key: string;
        key_id: string;
        permissions: string[];
      };
      expect(key.key).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      expect(key.permissions).toEqual(['svc_run_read']);

      const stored: unknown = await h.pool.oneFirst(
        sql.unsafe`SELECT key_sha256 FROM runs.api_keys WHERE key_id = ${key.key_id}`,
      );
      expect(stored).toMatch(/^[0-9a-f]{64}$/);
      expect(stored).not.toContain(key.key);
      const api = client(h.service.url, key.key);
      expect((await api.call('GET', '/api/v1/runs')).status).toBe(200);
      const refused = await api.submit({ image: IMAGE });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ detail: 'permission_denied' });

      const audit = await h.pool.any(sql.unsafe`
        SELECT action, outcome FROM runs.audit_records WHERE tenant_id = ${tenantId} ORDER BY audit_id`);
      expect(audit).toEqual([
        { action: 'tenant.create', outcome: 'ok' },
        { action: 'key.create', outcome: 'ok' },
        { action: 'run.submit', outcome: 'refused' },
      ]);

      await exec(ADMIN, ['key', 'revoke', key.key_id, '--json'], { env });
      expect((await api.call('GET', '/api/v1/runs')).status).toBe(401);
    }, 30_000);

    it('when the CLI is given an unknown permission (a usage error) or tier (not found), then it exits 2 or 1 and creates nothing', async () => {
      const tenantId = `t-cli-${ulid().toLowerCase()}`;
      await runAdmin(['tenant', 'create', tenantId], h.pool);
      await expect(
        exec(ADMIN, [
          'key',
          'create',
          '--tenant',
          tenantId,
          '--permissions',
          'svc_run_reed',
          '--json',
        ]),
      ).rejects.toMatchObject({ code: 2 });
      await expect(
        exec(ADMIN, [
          'key',
          'create',
          '--tenant',
          tenantId,
          '--permissions',
          'svc_run_read',
          '--tier',
          'nope',
          '--json',
        ]),
      ).rejects.toMatchObject({ code: 1 });
      expect(
        await h.pool.oneFirst(
          sql.unsafe`SELECT count(*)::int FROM runs.api_keys WHERE tenant_id = ${tenantId}`,
        ),
      ).toBe(0);
    }, 30_000);

    it.each([
      ['no header', null],
      ['a key that is not a UUID', 'not-a-uuid'],
      ['a UUID that is not v4', '6ba7b810-9dad-11d1-80b4-00c04fd430c8'],
      ['an unknown v4 key', uuidv4()],
    ])('when a request carries %s, then it is answered 401', async (_label, key) => {
      const reply = await client(h.service.url, key).call('GET', '/api/v1/runs');
      expect(reply.status).toBe(401);
      expect(reply.body).toEqual({ detail: 'missing or invalid bearer token' });
      expect(reply.headers.get('www-authenticate')).toBe('Bearer');
    });

    it('when a key lacks the permission of a route, then each route answers 403', async () => {
      const { key } = await newTenant(h.pool, { permissions: 'svc_workflow_read' });
      const api = client(h.service.url, key);
      const track = ulid();
      for (const [method, route] of [
        ['POST', '/api/v1/runs'],
        ['GET', '/api/v1/runs'],
        ['GET', `/api/v1/runs/${track}`],
        ['GET', `/api/v1/runs/${track}/result`],
        ['GET', `/api/v1/runs/${track}/logs`],
        ['GET', `/api/v1/runs/${track}/utilization`],
        ['POST', `/api/v1/runs/${track}/pause`],
        ['POST', `/api/v1/runs/${track}/kill`],
        ['DELETE', `/api/v1/runs/${track}`],
        ['GET', '/api/v1/tenant/quotas'],
        ['PUT', '/api/v1/tenant/quotas'],
        ['GET', '/api/v1/usage'],
        ['GET', '/api/v1/audit'],
      ] as const) {
        const reply = await api.call(method, route, method === 'GET' ? undefined : {});
        expect([method, route, reply.status]).toEqual([method, route, 403]);
      }
    });

    it("when a tenant asks for another tenant's run, then every run route answers 404 and the list leaves it out", async () => {
      const owner = await newTenant(h.pool);
      const other = await newTenant(h.pool);
      const mine = client(h.service.url, owner.key);
      const theirs = client(h.service.url, other.key);
      const { body } = await mine.submit({ image: IMAGE, command: ['true'] });
      await mine.waitFor(body.track_id, ['exited']);
      for (const [method, route] of [
        ['GET', ''],
        ['GET', '/result'],
        ['GET', '/logs'],
        ['GET', '/utilization'],
        ['POST', '/pause'],
        ['POST', '/stop'],
        ['DELETE', ''],
      ] as const) {
        const reply = await theirs.call(method, `/api/v1/runs/${body.track_id}${route}`);
        expect([method, route, reply.status, reply.body]).toEqual([
          method,
          route,
          404,
          { detail: 'run_not_found' },
        ]);
      }
      expect((await theirs.call<{ runs: unknown[] }>('GET', '/api/v1/runs')).body.runs).toEqual([]);
      expect((await mine.status(body.track_id)).status).toBe(200);
    }, 30_000);
  });

  describe('submit', () => {
    let api: ReturnType<typeof client>;
    let tenantId: string;
    beforeAll(async () => {
      const t = await newTenant(h.pool);
      tenantId = t.tenantId;
      api = client(h.service.url, t.key);
    });

    it.each([
      'busybox:latest',
      `${config.registryAddress}/busybox`,
      `${config.registryAddress}/BusyBox:1`,
      `${config.registryAddress}/busybox:`,
      `${config.registryAddress}//busybox:1`,
      `${config.registryAddress}/busybox@sha256:abc`,
      'not an image',
    ])(
      'when the image reference is %s, then 400 invalid_image:<ref> and nothing is stored',
      async (image) => {
        const before: unknown = await h.pool.oneFirst(
          sql.unsafe`SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${tenantId}`,
        );
        const reply = await api.submit({ image });
        expect(reply.status).toBe(400);
        expect(reply.body).toEqual({ detail: `invalid_image:${image}` });
        expect(
          await h.pool.oneFirst(
            sql.unsafe`SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${tenantId}`,
          ),
        ).toBe(before);
      },
    );

    it('when a reference carries a digest, then it is accepted', async () => {
      const digest = `sha256:${'a'.repeat(64)}`;
      const reply = await api.submit({
        image: `${config.registryAddress}/busybox@${digest}`,
        scheduled_start: '2999-01-01T00:00:00Z',
      });
      expect(reply.status).toBe(202);
    });

    it('when scheduled_start is in the past, then eligible_start is clamped to now', async () => {
      const before = Date.now();
      const reply = await api.submit({
        image: IMAGE,
        command: ['true'],
        scheduled_start: '2001-01-01T00:00:00Z',
      });
      expect(reply.status).toBe(202);
      expect(Date.parse(reply.body.eligible_start)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(reply.body.eligible_start)).toBeLessThanOrEqual(Date.now());
      expect(reply.body.eligible_start).toMatch(/Z$/);
    });

    it('when scheduled_start is in the future, then it is the eligible_start and the run waits scheduled', async () => {
      const fresh = client(h.service.url, (await newTenant(h.pool)).key);
      const reply = await fresh.submit({
        image: IMAGE,
        scheduled_start: '2999-01-01T00:00:00.123Z',
      });
      expect(reply.body).toMatchObject({
        status: 'scheduled',
        eligible_start: '2999-01-01T00:00:00.123Z',
      });
      const status = await fresh.status(reply.body.track_id);
      expect(status.body).toMatchObject({
        state: 'scheduled',
        started_at: null,
        finished_at: null,
        exit_code: null,
      });
      expect(status.body.scheduling_info).toMatchObject({
        eligible_start: '2999-01-01T00:00:00.123Z',
        working_hours_applied: false,
        queue_position: 1,
      });
    });

    it.each([
      ['2030-01-01T00:00:00+00:00'],
      ['2030-01-01T00:00:00'],
      ['2030-01-01'],
      ['2030-13-01T00:00:00Z'],
      ['2030-02-29T00:00:00Z'],
      ['2030-04-31T00:00:00Z'],
      ['2030-01-01T24:00:00Z'],
      ['2030-06-30T23:59:60Z'],
    ])('when an instant lacks the Z suffix or is not a date (%s), then 422', async (instant) => {
      for (const field of ['scheduled_start', 'expires_at']) {
        const reply = await api.submit({ image: IMAGE, [field]: instant });
        expect(reply).toMatchObject({ status: 422 });
        expect(JSON.stringify(reply.body)).toContain(
          `${field} must be an ISO-8601 UTC instant with the Z suffix, on a real date`,
        );
      }
    });

    it('when an instant is 29 February of a leap year, then it is a date (here a past one)', async () => {
      const reply = await api.submit({ image: IMAGE, expires_at: '2024-02-29T00:00:00Z' });
      expect(reply).toMatchObject({ status: 400, body: { detail: 'expires_at_in_past' } });
    });

    it('when a name, tag, argument or env value holds U+0000, then 422 naming it, and nothing is stored', async () => {
      const before = await api.call<{ runs: unknown[] }>('GET', '/api/v1/runs?limit=1000');
      for (const body of [
        { name: 'a\u0000b' },
        { tags: ['a\u0000b'] },
        { command: ['echo', 'a\u0000b'] },
        { env: { A: 'a\u0000b' } },
      ]) {
        const reply = await api.submit({ image: IMAGE, ...body });
        expect(reply.status).toBe(422);
        expect(JSON.stringify(reply.body)).toContain('must not contain U+0000 (NUL)');
      }
      const tagged = await api.call('GET', '/api/v1/runs?tag=a%00b');
      expect(tagged.status).toBe(422);
      const after = await api.call<{ runs: unknown[] }>('GET', '/api/v1/runs?limit=1000');
      expect(after.body.runs.length).toBe(before.body.runs.length);
    });

    it('when a name or tag counts its characters, an emoji is one (as JSON Schema maxLength counts)', async () => {
      const accepted = await api.submit({
        image: IMAGE,
        command: ['true'],
        name: '🙂'.repeat(128),
        tags: ['🙂'.repeat(64)],
      });
      expect(accepted.status).toBe(202);
      expect((await api.submit({ image: IMAGE, name: '🙂'.repeat(129) })).status).toBe(422);
      expect((await api.submit({ image: IMAGE, tags: ['🙂'.repeat(65)] })).status).toBe(422);
    });

    it('when expires_at is in the past, then 400 expires_at_in_past', async () => {
      const reply = await api.submit({ image: IMAGE, expires_at: '2001-01-01T00:00:00Z' });
      expect(reply).toMatchObject({ status: 400, body: { detail: 'expires_at_in_past' } });
    });

    it('when env carries a non-string value, then 422; strings (even empty) are accepted', async () => {
      expect((await api.submit({ image: IMAGE, env: { A: 1 } })).status).toBe(422);
      expect((await api.submit({ image: IMAGE, env: { A: true } })).status).toBe(422);
      expect((await api.submit({ image: IMAGE, env: { A: null } })).status).toBe(422);
      expect((await api.submit({ image: IMAGE, command: ['true'], env: { A: '' } })).status).toBe(
        202,
      );
    });

    it('when name is 128 characters, then it is accepted; 129, then 422', async () => {
      expect(
        (await api.submit({ image: IMAGE, command: ['true'], name: 'n'.repeat(128) })).status,
      ).toBe(202);
      expect((await api.submit({ image: IMAGE, name: 'n'.repeat(129) })).status).toBe(422);
      expect((await api.submit({ image: IMAGE, name: '' })).status).toBe(422);
      // An empty argument is still an argument.
      const empty = await api.submit({ image: IMAGE, command: ['printf', '%s|%s', '', 'x'] });
      expect(empty.status).toBe(202);
      expect((await api.waitFor(empty.body.track_id, ['exited'])).command).toEqual([
        'printf',
        '%s|%s',
        '',
        'x',
      ]);
    });

    it('when the body has an unknown field or malformed JSON, then 422 and 400', async () => {
      expect((await api.submit({ image: IMAGE, colour: 'red' })).status).toBe(422);
      expect((await api.submit({ command: ['true'] })).status).toBe(422);
      const malformed = await api.call('POST', '/api/v1/runs', '{"image": ');
      expect(malformed.status).toBe(400);
    });

    it('when limits are at the tenant maxima they are kept; one past, they are clamped with clamped: true', async () => {
      const t = await newTenant(h.pool);
      const own = client(h.service.url, t.key);
      const put = await own.call('PUT', '/api/v1/tenant/quotas', {
        max_timeout_seconds: 60,
        max_cpu_cores: 0.5,
        max_memory_mb: 64,
      });
      expect(put.status).toBe(200);
      const at = await own.submit({
        image: IMAGE,
        command: ['true'],
        timeout_seconds: 60,
        cpu_limit: 0.5,
        memory_limit_mb: 64,
      });
      expect(at.body.clamped).toBe(false);
      const farOver = Number.MAX_SAFE_INTEGER;
      for (const over of [
        { timeout_seconds: 61 },
        { cpu_limit: 0.501 },
        { memory_limit_mb: 65 },
        { timeout_seconds: 10_000_000 },
        { timeout_seconds: farOver, cpu_limit: farOver, memory_limit_mb: farOver },
      ]) {
        const reply = await own.submit({ image: IMAGE, command: ['true'], ...over });
        expect([over, reply.body.clamped]).toEqual([over, true]);
        const run = (await own.status(reply.body.track_id)).body;
        expect(run).toMatchObject({
          timeout_seconds: 60,
          cpu_limit: 0.5,
          memory_limit_mb: 64,
          clamped: true,
        });
      }
      // Past what a JSON number holds exactly, and below Docker's CPU resolution: refused.
      for (const refused of [
        { timeout_seconds: farOver + 1 },
        { memory_limit_mb: 2 ** 60 },
        { cpu_limit: 0.0009 },
      ])
        expect([refused, (await own.submit({ image: IMAGE, ...refused })).status]).toEqual([
          refused,
          422,
        ]);
      const defaults = await own.submit({ image: IMAGE, command: ['true'] });
      expect(defaults.body.clamped).toBe(false);
      expect((await own.status(defaults.body.track_id)).body).toMatchObject({
        timeout_seconds: 60,
        cpu_limit: 0.5,
        memory_limit_mb: 64,
      });
    });

    it('when max_daily_runs submissions were made today, then the next is 429 daily_quota_exceeded and not stored', async () => {
      const t = await newTenant(h.pool);
      const own = client(h.service.url, t.key);
      await own.call('PUT', '/api/v1/tenant/quotas', { max_daily_runs: 2 });
      expect((await own.submit({ image: IMAGE, command: ['true'] })).status).toBe(202);
      expect((await own.submit({ image: IMAGE, command: ['true'] })).status).toBe(202);
      const third = await own.submit({ image: IMAGE, command: ['true'] });
      expect(third).toMatchObject({ status: 429, body: { detail: 'daily_quota_exceeded' } });
      expect(
        await h.pool.oneFirst(
          sql.unsafe`SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${t.tenantId}`,
        ),
      ).toBe(2);
      const audit = await own.call<{
        records: { action: string; outcome: string; detail: { reason: string } }[];
      }>('GET', '/api/v1/audit');
      expect(audit.body.records[0]).toMatchObject({
        action: 'run.submit',
        outcome: 'refused',
        detail: { reason: 'daily_quota_exceeded' },
      });
      const usage = await own.call<{
        usage: { policy: string; used: number | null; limit: number; remaining: number }[];
      }>('GET', '/api/v1/usage');
      expect(usage.body.usage.find((u) => u.policy === 'daily_runs')).toMatchObject({
        used: 2,
        limit: 2,
        remaining: 0,
      });
    });

    it('when a tier restricts images, then another image is 403 image_not_allowed and usage reports the tier', async () => {
      const tier = `tier-${ulid().toLowerCase().slice(-8)}`;
      await runAdmin(
        [
          'tier',
          'set',
          tier,
          '--metered',
          'true',
          '--allowed-images',
          `${config.registryAddress}/busybox:`,
          '--timeout-seconds',
          '30',
        ],
        h.pool,
      );
      const t = await newTenant(h.pool, { tier });
      const own = client(h.service.url, t.key);
      const refused = await own.submit({
        image: `${config.registryAddress}/testing/busybox:stable`,
      });
      expect(refused).toMatchObject({ status: 403, body: { detail: 'image_not_allowed' } });
      const accepted = await own.submit({ image: IMAGE, command: ['true'], timeout_seconds: 100 });
      expect(accepted.body).toMatchObject({ status: 'scheduled', clamped: true });
      const usage = await own.call('GET', '/api/v1/usage');
      expect(usage.body).toMatchObject({
        tier,
        metered: true,
        allowed_images: [`${config.registryAddress}/busybox:`],
        limits: {
          timeout_seconds: 30,
          memory_limit_mb: 2048,
          cpu_cores: 2,
          concurrent_runs: 5,
          daily_runs: 1000,
          workflow_nodes: 50,
          retention_days: 30,
        },
      });
      await own.waitFor(accepted.body.track_id, ['exited']);
      // Charged its clamped timeout up front, in the quota service (runs/metering.test.ts
      // follows the commit of what it used).
      const ledger = await quotaRecords(t).ledger();
      expect(ledger[0]).toMatchObject({
        entry_type: 'reserve',
        amount: 30,
        metadata: { track_id: accepted.body.track_id },
      });
    }, 30_000);

    it('when a metered key would pass its metered_seconds_per_day, then the submit is 429 metered_quota_exceeded and nothing is written', async () => {
      const tier = `tier-${ulid().toLowerCase().slice(-8)}`;
      await runAdmin(
        ['tier', 'set', tier, '--metered', 'true', '--metered-seconds-per-day', '50'],
        h.pool,
      );
      const t = await newTenant(h.pool, { tier });
      const own = client(h.service.url, t.key);
      // Deferred, so the charges stand (no refund) while the cap is checked.
      const later = { image: IMAGE, command: ['true'], scheduled_start: '2999-01-01T00:00:00Z' };
      const first = await own.submit({ ...later, timeout_seconds: 30 });
      expect(first.status).toBe(202);
      const second = await own.submit({ ...later, timeout_seconds: 30 });
      expect(second).toMatchObject({ status: 429, body: { detail: 'metered_quota_exceeded' } });
      const third = await own.submit({ ...later, timeout_seconds: 20 });
      expect(third.status).toBe(202); // exactly at the cap
      const onePast = await own.submit({ ...later, timeout_seconds: 1 });
      expect(onePast).toMatchObject({ status: 429, body: { detail: 'metered_quota_exceeded' } });
      const stored: unknown = await h.pool.oneFirst(sql.unsafe`
        SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${t.tenantId}`);
      expect(stored).toBe(2);
      const usage = await own.call<{
        usage: { policy: string; used: number | null; limit: number; remaining: number }[];
      }>('GET', '/api/v1/usage');
      expect(usage.body.usage.find((u) => u.policy === 'metered_run_seconds')).toMatchObject({
        used: 50,
        limit: 50,
        remaining: 0,
      });
    });
  });

  describe('quotas, usage and audit', () => {
    it('when quotas are read, then every field of the table comes back with its default', async () => {
      const { key } = await newTenant(h.pool);
      const reply = await client(h.service.url, key).call('GET', '/api/v1/tenant/quotas');
      expect(reply.body).toEqual({
        max_concurrent_runs: 5,
        max_daily_runs: 1000,
        max_timeout_seconds: 3600,
        max_cpu_cores: 2,
        max_memory_mb: 2048,
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
      });
    });

    it('when PUT names some fields, then only those change and the change is audited', async () => {
      const { key, keyId } = await newTenant(h.pool);
      const api = client(h.service.url, key);
      const reply = await api.call('PUT', '/api/v1/tenant/quotas', {
        max_concurrent_runs: 2,
        retention_days: 7,
      });
      expect(reply.body).toMatchObject({
        max_concurrent_runs: 2,
        retention_days: 7,
        max_daily_runs: 1000,
      });
      expect((await api.call('GET', '/api/v1/tenant/quotas')).body).toMatchObject({
        max_concurrent_runs: 2,
        retention_days: 7,
      });
      const audit = await api.call<{ records: Record<string, unknown>[] }>(
        'GET',
        '/api/v1/audit?limit=1',
      );
      expect(audit.body.records).toEqual([
        expect.objectContaining({
          actor: keyId,
          action: 'tenant.quotas.update',
          outcome: 'ok',
          // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment
          detail: expect.objectContaining({
            changes: { max_concurrent_runs: 2, retention_days: 7 },
          }),
        }),
      ]);
    });

    it('when requests are refused (400, 403, 409, 422, 429), then each refusal is in the audit log with its route, run and reason; a 404 is not', async () => {
      const { key, keyId } = await newTenant(h.pool, {
        permissions: 'svc_run_submit,svc_run_read,svc_run_delete',
      });
      const api = client(h.service.url, key);
      const { track_id } = (
        await api.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' })
      ).body;
      expect((await api.submit({ image: 'not an image' })).status).toBe(400);
      expect((await api.submit({ image: IMAGE, colour: 'red' })).status).toBe(422);
      expect((await api.call('POST', `/api/v1/runs/${track_id}/kill`)).status).toBe(403);
      expect((await api.call('DELETE', `/api/v1/runs/${track_id}`)).status).toBe(409);
      expect((await api.call('GET', '/api/v1/runs?colour=red')).status).toBe(400);
      expect((await api.call('GET', `/api/v1/runs/${ulid()}`)).status).toBe(404);

      const audit = await api.call<{ records: Record<string, unknown>[] }>('GET', '/api/v1/audit');
      const refusals = audit.body.records
        .filter((r) => r.outcome === 'refused')
        .map((r) => [r.action, r.target, (r.detail as { reason: string }).reason, r.actor])
        .reverse();
      expect(refusals).toEqual([
        ['run.submit', null, 'invalid_image', keyId],
        ['run.submit', null, 'INVALID_REQUEST', keyId],
        ['run.kill', track_id, 'permission_denied', keyId],
        ['run.delete', track_id, 'not_terminal', keyId],
        ['run.list', null, 'unknown_query_parameter', keyId],
      ]);
    });

    it('when PUT has no field, an unknown field or a bad value, then 422 and nothing changes', async () => {
      const { key } = await newTenant(h.pool);
      const api = client(h.service.url, key);
      expect((await api.call('PUT', '/api/v1/tenant/quotas', {})).status).toBe(422);
      expect((await api.call('PUT', '/api/v1/tenant/quotas', { max_runs: 3 })).status).toBe(422);
      expect(
        (await api.call('PUT', '/api/v1/tenant/quotas', { max_concurrent_runs: 0 })).status,
      ).toBe(422);
      expect((await api.call('GET', '/api/v1/tenant/quotas')).body).toMatchObject({
        max_concurrent_runs: 5,
      });
    });

    it('when working_hours_tjp is invalid, then 422 naming the line; when valid, runs wait for working time', async () => {
      const { key } = await newTenant(h.pool);
      const api = client(h.service.url, key);
      const bad = await api.call('PUT', '/api/v1/tenant/quotas', {
        working_hours_tjp: 'workinghours mon - fri 9:00 - 25:00',
      });
      expect(bad.status).toBe(422);
      expect((bad.body as { detail: string }).detail).toMatch(/^invalid_shift_definition: line 1/);
      const none = await api.call('PUT', '/api/v1/tenant/quotas', {
        working_hours_tjp: 'workinghours sun - sat off',
      });
      expect(none).toMatchObject({
        status: 422,
        body: { detail: 'invalid_shift_definition: no working time' },
      });

      const ok = await api.call('PUT', '/api/v1/tenant/quotas', {
        working_hours_tjp: 'workinghours sun - sat 3:00 - 3:01',
      });
      expect(ok.status).toBe(200);
      const reply = await api.submit({ image: IMAGE, scheduled_start: '2999-01-01T10:00:00Z' });
      expect(reply.body.eligible_start).toBe('2999-01-02T03:00:00.000Z');
      const status = await api.status(reply.body.track_id);
      expect(status.body.scheduling_info).toMatchObject({
        working_hours_applied: true,
        eligible_start: '2999-01-02T03:00:00.000Z',
      });
      // The run's workflow keeps them: a run still waiting for a slot takes one only within them.
      const temporal = createTemporalClient(config);
      const started = await eventually(() =>
        temporal.workflow
          .getHandle(`run/${reply.body.track_id}`)
          .fetchHistory()
          .then(
            (history) => history.events?.[0]?.workflowExecutionStartedEventAttributes ?? undefined,
          )
          .catch(() => undefined),
      );
      await temporal.connection.close();
      const [input] = await payloadValues(started.input!.payloads!);
      expect(input).toMatchObject({ workingHoursTjp: 'workinghours sun - sat 3:00 - 3:01' });
    });
  });

  describe('reads', () => {
    it('when the list is filtered by state and tag and paged, then it returns the matching runs newest first', async () => {
      const { key } = await newTenant(h.pool);
      const api = client(h.service.url, key);
      const a = await api.submit({ image: IMAGE, command: ['true'], tags: ['x'] });
      const b = await api.submit({
        image: IMAGE,
        scheduled_start: '2999-01-01T00:00:00Z',
        tags: ['x', 'y'],
      });
      const c = await api.submit({
        image: IMAGE,
        scheduled_start: '2999-01-01T00:00:00Z',
        tags: ['y'],
      });
      await api.waitFor(a.body.track_id, ['exited']);
      const ids = async (query: string) =>
        (
          await api.call<{ runs: { track_id: string }[] }>('GET', `/api/v1/runs${query}`)
        ).body.runs.map((r) => r.track_id);
      expect(await ids('')).toEqual([c.body.track_id, b.body.track_id, a.body.track_id]);
      expect(await ids('?tag=x')).toEqual([b.body.track_id, a.body.track_id]);
      expect(await ids('?state_filter=scheduled')).toEqual([c.body.track_id, b.body.track_id]);
      expect(await ids('?state_filter=exited,failed&tag=x')).toEqual([a.body.track_id]);
      expect(await ids('?limit=1&offset=1')).toEqual([b.body.track_id]);
      expect(await ids('?limit=1000')).toHaveLength(3);
    });

    it('when limit is past 1000 or 0, or a parameter is unknown, then 422 and 400 naming the supported set', async () => {
      const { key } = await newTenant(h.pool);
      const api = client(h.service.url, key);
      expect((await api.call('GET', '/api/v1/runs?limit=1001')).status).toBe(422);
      expect((await api.call('GET', '/api/v1/runs?limit=0')).status).toBe(422);
      expect((await api.call('GET', '/api/v1/runs?state_filter=sleeping')).status).toBe(422);
      const unknown = await api.call('GET', '/api/v1/runs?state=running');
      expect(unknown).toMatchObject({
        status: 400,
        body: {
          detail: 'unknown query parameter(s): state; supported: state_filter, tag, limit, offset',
        },
      });
      const onLogs = await api.call('GET', `/api/v1/runs/${ulid()}/logs?tail=5`);
      expect(onLogs).toMatchObject({
        status: 400,
        body: { detail: 'unknown query parameter(s): tail; supported: stream, since, limit' },
      });
    });

    it('when a run is not terminal, then its result is 409 not_terminal; an unknown run is 404', async () => {
      const { key } = await newTenant(h.pool);
      const api = client(h.service.url, key);
      const waiting = await api.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' });
      expect(await api.call('GET', `/api/v1/runs/${waiting.body.track_id}/result`)).toMatchObject({
        status: 409,
        body: { detail: 'not_terminal' },
      });
      expect((await api.call('GET', `/api/v1/runs/${ulid()}`)).status).toBe(404);
      expect((await api.call('GET', '/api/v1/runs/not-a-ulid')).status).toBe(404);
    });
  });
});

describe('per-tenant request rate limit', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      RUNS_RATE_LIMIT_REQUESTS: '3',
      RUNS_RATE_LIMIT_WINDOW_SECONDS: '3600',
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('when a tenant makes one request past the limit in a window, then it is 429 with Retry-After; another tenant is unaffected', async () => {
    const one = client(h.service.url, (await newTenant(h.pool)).key);
    const two = client(h.service.url, (await newTenant(h.pool)).key);
    const fields = (reply: { headers: Headers }) => [
      reply.headers.get('ratelimit-policy'),
      reply.headers.get('ratelimit')?.replace(/;t=\d+$/, ''),
    ];
    for (let i = 0; i < 3; i++) {
      const served = await one.call('GET', '/api/v1/runs');
      expect(served.status).toBe(200);
      expect(fields(served)).toEqual(['"tenant";q=3;w=3600', `"tenant";r=${2 - i}`]);
    }
    const limited = await one.call('GET', '/api/v1/runs');
    expect(limited).toMatchObject({ status: 429, body: { detail: 'rate_limited' } });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(fields(limited)).toEqual(['"tenant";q=3;w=3600', '"tenant";r=0']);
    // The window's reset is the wait Retry-After names.
    expect(limited.headers.get('ratelimit')).toBe(`"tenant";r=0;t=${retryAfter}`);
    expect((await two.call('GET', '/api/v1/runs')).status).toBe(200);
  });

  it('when a tenant is refused for its rate again and again in a window, then its audit log holds the first refusal only', async () => {
    const { tenantId, key } = await newTenant(h.pool);
    const own = client(h.service.url, key);
    for (let i = 0; i < 3; i++) await own.call('GET', '/api/v1/runs');
    for (let i = 0; i < 5; i++) expect((await own.call('GET', '/api/v1/runs')).status).toBe(429);
    const refusals = await h.pool.any(sql.unsafe`
      SELECT action, detail FROM runs.audit_records
      WHERE tenant_id = ${tenantId} AND outcome = 'refused'`);
    expect(refusals).toEqual([
      {
        action: 'run.list',
        detail: {
          reason: 'rate_limited',
          status: 429,
          message: 'rate_limited',
          limit: 3,
          window_seconds: 3600,
        },
      },
    ]);
  });
});
