/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import { sql } from '../../../db/pool';
import { flushLedgerStream } from '../../../services/quota/consumption/ledger-flush';
import { ALERT_LIMITS } from '../../../api/quota/routes/alerts';
import { startHttpsReceiver, type Receiver } from '../../support/https-receiver';
import { eventually } from '../../support/services';
import { verifyStandardWebhook } from '../../support/python-standard-webhooks';
import { webhookTestEnv } from '../../support/webhook-test-env';
import { startQuota, subjectOnPlan, type QuotaClient, type QuotaHarness } from './support';

/**
 * Quota webhook endpoints (signed by the Standard Webhooks scheme, checked with its own Python
 * library against a real HTTPS receiver) and alert rules: every route, each bound at and past
 * its edge, references, scopes and the audit.
 */
describe('quota: webhook endpoints and alert rules', () => {
  let h: QuotaHarness;
  let admin: QuotaClient;
  let tenantId: string;
  let receiver: Receiver;
  beforeAll(async () => {
    // Retries a second apart: a delivery's second attempt comes within the test.
    h = await startQuota(webhookTestEnv());
    ({ admin, id: tenantId } = await h.newTenant());
    receiver = await startHttpsReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await h?.close();
  });

  const endpoint = async (extra: Record<string, unknown> = {}) => {
    const created = await admin.post('/v1/webhook-endpoints', { url: receiver.url, ...extra });
    expect(created.status).toBe(201);
    return created.body;
  };
  const locOf = (reply: { body: { detail?: { loc: unknown }[] } }) => reply.body.detail?.[0]?.loc;
  const policy = async () => {
    const resource = (await admin.post('/v1/resources', { name: `r-${Math.random()}` })).body;
    const made = await admin.post('/v1/policies', {
      name: `p-${Math.random()}`,
      resource_id: resource.id,
      kind: 'quota',
      limit_amount: 100,
      window_kind: 'fixed',
      window_unit: 'day',
    });
    expect(made.status).toBe(201);
    return made.body;
  };

  describe('webhook endpoints', () => {
    it('creates an endpoint with its secret shown once; reads, lists and changes it; deletes it; the audit never holds the secret', async () => {
      const created = await endpoint({ description: 'ops' });
      expect(created).toEqual({
        id: expect.stringMatching(/^whe_/),
        url: receiver.url,
        description: 'ops',
        event_types: ['alert.triggered'],
        enabled: true,
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      const { secret, ...shown } = created;
      expect((await admin.get(`/v1/webhook-endpoints/${created.id}`)).body).toEqual(shown);
      const listed = (await admin.get('/v1/webhook-endpoints')).body;
      expect(listed.find((e: { id: string }) => e.id === created.id)).toEqual(shown);
      expect(JSON.stringify(listed)).not.toContain(secret);

      const patched = await admin.patch(`/v1/webhook-endpoints/${created.id}`, {
        url: `${receiver.url}/hooks`,
        enabled: false,
        description: null,
      });
      expect(patched.body).toMatchObject({
        url: `${receiver.url}/hooks`,
        enabled: false,
        description: 'ops',
      });
      expect((await admin.delete(`/v1/webhook-endpoints/${created.id}`)).status).toBe(204);
      expect(await admin.get(`/v1/webhook-endpoints/${created.id}`)).toMatchObject({
        status: 404,
        body: { detail: 'webhook_endpoint_not_found' },
      });
      const audit = await h.pool.any(sql.unsafe`
        SELECT action, before, after FROM quota.audit
        WHERE tenant_id = ${tenantId} AND entity_id = ${created.id} ORDER BY seq`);
      expect(audit.map((a) => a.action)).toEqual([
        'webhook_endpoint.create',
        'webhook_endpoint.update',
        'webhook_endpoint.delete',
      ]);
      expect(JSON.stringify(audit)).not.toContain(secret);
    });

    it('refuses a url that is not absolute https without userinfo, or past 2048 characters; unknown event types; unknown fields (422 at the field)', async () => {
      const refused = async (body: Record<string, unknown>, loc: (string | number)[]) => {
        const reply = await admin.post('/v1/webhook-endpoints', body);
        expect([reply.status, locOf(reply)]).toEqual([422, loc]);
      };
      for (const url of [
        'http://example.com/hook',
        'https://user:pw@example.com/',
        'ftp://example.com',
        'https:///nohost',
        'https://exa mple.com/',
      ])
        await refused({ url }, ['body', 'url']);
      const edge = `https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`;
      expect((await admin.post('/v1/webhook-endpoints', { url: edge })).status).toBe(201);
      await refused({ url: `${edge}a` }, ['body', 'url']);
      await refused({ url: receiver.url, event_types: [] }, ['body', 'event_types']);
      await refused({ url: receiver.url, event_types: ['run.exited'] }, ['body', 'event_types', 0]);
      await refused({ url: receiver.url, secret: 'whsec_x' }, ['body', 'secret']);
      expect(await admin.patch('/v1/webhook-endpoints/whe_nope', { enabled: true })).toMatchObject({
        status: 404,
        body: { detail: 'webhook_endpoint_not_found' },
      });
    });

    it('sends a signed webhook.test to a real HTTPS receiver, verified by the standardwebhooks library, and records it as a delivery', async () => {
      const made = await endpoint();
      receiver.respondWith(() => ({ status: 204 }));
      const before = receiver.requests.length;
      const tested = await admin.post(`/v1/webhook-endpoints/${made.id}/test`);
      expect(tested).toMatchObject({
        status: 200,
        body: {
          delivery_id: expect.stringMatching(/^whd_/),
          delivered: true,
          status_code: 204,
          error: null,
        },
      });
      expect(tested.body.latency_ms).toBeGreaterThanOrEqual(0);
      const [request] = receiver.requests.slice(before);
      expect(request!.headers['webhook-id']).toMatch(/^msg_/);
      expect(request!.headers['content-type']).toBe('application/json');
      const payload = verifyStandardWebhook(made.secret, request!.headers, request!.rawBody);
      expect(payload).toEqual({
        type: 'webhook.test',
        timestamp: expect.any(String),
        data: { endpoint_id: made.id, tenant_id: tenantId },
      });
      // Another secret, or a changed body, does not verify.
      const other = await endpoint();
      expect(() =>
        verifyStandardWebhook(other.secret, request!.headers, request!.rawBody),
      ).toThrow();
      expect(() =>
        verifyStandardWebhook(made.secret, request!.headers, Buffer.from('{}')),
      ).toThrow();

      receiver.respondWith(() => ({ status: 500 }));
      const failed = await admin.post(`/v1/webhook-endpoints/${made.id}/test`);
      expect(failed.body).toMatchObject({ delivered: false, status_code: 500 });
      expect(failed.body.error).toEqual(expect.any(String));
      receiver.respondWith(() => ({ status: 200 }));

      const deliveries = await admin.get(`/v1/webhook-deliveries?endpoint_id=${made.id}`);
      expect(deliveries.body).toEqual([
        {
          id: failed.body.delivery_id,
          endpoint_id: made.id,
          alert_event_id: null,
          event_type: 'webhook.test',
          attempt_count: 1,
          status: 'dead',
          last_status_code: 500,
          last_error: failed.body.error,
          next_attempt_at: null,
          created_at: expect.any(String),
        },
        expect.objectContaining({
          id: tested.body.delivery_id,
          status: 'delivered',
          last_status_code: 204,
          last_error: null,
        }),
      ]);
      expect((await admin.get('/v1/webhook-deliveries?limit=1')).body).toHaveLength(1);
      expect((await admin.get('/v1/webhook-deliveries?limit=500')).status).toBe(200);
      expect((await admin.get('/v1/webhook-deliveries?limit=501')).status).toBe(422);
      expect((await admin.get('/v1/webhook-deliveries?limit=0')).status).toBe(422);
    });

    it("answers 404 for another tenant's endpoint on every route, and lists none of its deliveries", async () => {
      const made = await endpoint();
      await admin.post(`/v1/webhook-endpoints/${made.id}/test`);
      const { admin: other } = await h.newTenant();
      for (const reply of [
        await other.get(`/v1/webhook-endpoints/${made.id}`),
        await other.patch(`/v1/webhook-endpoints/${made.id}`, { enabled: false }),
        await other.post(`/v1/webhook-endpoints/${made.id}/test`),
        await other.delete(`/v1/webhook-endpoints/${made.id}`),
      ])
        expect(reply).toMatchObject({
          status: 404,
          body: { detail: 'webhook_endpoint_not_found' },
        });
      expect((await other.get(`/v1/webhook-deliveries?endpoint_id=${made.id}`)).body).toEqual([]);
    });
  });

  describe('alert rules', () => {
    const rule = (extra: Record<string, unknown> = {}) => ({
      name: 'usage high',
      threshold_pct: 80,
      channels: { webhooks: [], emails: [] },
      ...extra,
    });

    it('creates a rule with its defaults and its scope; reads, lists, changes (null leaves a field) and deletes it; each change audited', async () => {
      const p = await policy();
      const hook = await endpoint();
      const created = await admin.post(
        '/v1/alert-rules',
        rule({
          policy_id: p.id,
          resource_id: p.resource_id,
          subject_filter: 'acme:*',
          channels: { webhooks: [hook.id], emails: ['ops@example.com'] },
        }),
      );
      expect(created).toMatchObject({ status: 201 });
      expect(created.body).toEqual({
        id: expect.stringMatching(/^alr_/),
        name: 'usage high',
        policy_id: p.id,
        resource_id: p.resource_id,
        subject_filter: 'acme:*',
        threshold_pct: 80,
        channels: { webhooks: [hook.id], emails: ['ops@example.com'] },
        cooldown_seconds: 0,
        enabled: true,
        created_at: expect.any(String),
      });
      const id = created.body.id;
      expect((await admin.get(`/v1/alert-rules/${id}`)).body).toEqual(created.body);
      expect((await admin.get('/v1/alert-rules')).body).toContainEqual(created.body);
      const patched = await admin.patch(`/v1/alert-rules/${id}`, {
        threshold_pct: 100,
        cooldown_seconds: 3600,
        name: null,
        channels: null,
        enabled: false,
      });
      expect(patched.body).toEqual({
        ...created.body,
        threshold_pct: 100,
        cooldown_seconds: 3600,
        enabled: false,
      });
      const bare = await admin.post('/v1/alert-rules', {
        name: 'any',
        threshold_pct: 1,
        channels: {},
      });
      expect(bare.body).toMatchObject({
        policy_id: null,
        resource_id: null,
        subject_filter: null,
        channels: { webhooks: [], emails: [] },
      });
      expect((await admin.delete(`/v1/alert-rules/${id}`)).status).toBe(204);
      expect(await admin.get(`/v1/alert-rules/${id}`)).toMatchObject({
        status: 404,
        body: { detail: 'alert_rule_not_found' },
      });
      const audit = await h.pool.anyFirst(sql.unsafe`
        SELECT action FROM quota.audit WHERE entity_id = ${id} ORDER BY seq`);
      expect(audit).toEqual(['alert_rule.create', 'alert_rule.update', 'alert_rule.delete']);
    });

    it('holds every bound at its edge and refuses one past it (422 at the field)', async () => {
      const accepts = async (extra: Record<string, unknown>) =>
        expect((await admin.post('/v1/alert-rules', rule(extra))).status).toBe(201);
      const refuses = async (extra: Record<string, unknown>, loc: (string | number)[]) => {
        const reply = await admin.post('/v1/alert-rules', rule(extra));
        expect([reply.status, locOf(reply)]).toEqual([422, loc]);
      };
      await accepts({ threshold_pct: 1 });
      await accepts({ threshold_pct: ALERT_LIMITS.thresholdPctMax });
      await refuses({ threshold_pct: 0 }, ['body', 'threshold_pct']);
      await refuses({ threshold_pct: 1001 }, ['body', 'threshold_pct']);
      await accepts({ cooldown_seconds: ALERT_LIMITS.cooldownSecondsMax });
      await refuses({ cooldown_seconds: -1 }, ['body', 'cooldown_seconds']);
      await refuses({ cooldown_seconds: 604_801 }, ['body', 'cooldown_seconds']);
      await accepts({ name: 'n'.repeat(200) });
      await refuses({ name: 'n'.repeat(201) }, ['body', 'name']);
      await refuses({ name: '' }, ['body', 'name']);
      await accepts({ subject_filter: 's'.repeat(256) });
      await refuses({ subject_filter: 's'.repeat(257) }, ['body', 'subject_filter']);
      await refuses({ subject_filter: 'a{b}' }, ['body', 'subject_filter']);
      const emails = (n: number) => Array.from({ length: n }, (_, i) => `ops${i}@example.com`);
      await accepts({ channels: { emails: emails(10) } });
      await refuses({ channels: { emails: emails(11) } }, ['body', 'channels', 'emails']);
      await refuses({ channels: { emails: ['not-an-address'] } }, [
        'body',
        'channels',
        'emails',
        0,
      ]);
      await refuses({ channels: { emails: ['a@example.com', 'a@example.com'] } }, [
        'body',
        'channels',
        'emails',
        1,
      ]);
      await refuses({ extra: true }, ['body', 'extra']);
      const patch = await admin.patch('/v1/alert-rules/alr_none', { threshold_pct: 1001 });
      expect([patch.status, locOf(patch)]).toEqual([422, ['body', 'threshold_pct']]);
    });

    it('refuses references the tenant lacks (422 reference_not_found), a policy off the resource, and keeps what a rule names from being deleted (409 in_use)', async () => {
      const p = await policy();
      const other = await policy();
      const hook = await endpoint();
      const refused = async (
        extra: Record<string, unknown>,
        loc: (string | number)[],
        type: string,
      ) => {
        const reply = await admin.post('/v1/alert-rules', rule(extra));
        expect([reply.status, locOf(reply), reply.body.detail?.[0]?.type]).toEqual([
          422,
          loc,
          type,
        ]);
      };
      await refused({ policy_id: 'pol_none' }, ['body', 'policy_id'], 'reference_not_found');
      await refused({ resource_id: 'res_none' }, ['body', 'resource_id'], 'reference_not_found');
      await refused(
        { channels: { webhooks: [hook.id, 'whe_none'] } },
        ['body', 'channels', 'webhooks', 1],
        'reference_not_found',
      );
      await refused(
        { policy_id: p.id, resource_id: other.resource_id },
        ['body', 'policy_id'],
        'policy_resource_mismatch',
      );
      const made = (
        await admin.post(
          '/v1/alert-rules',
          rule({ policy_id: p.id, channels: { webhooks: [hook.id] } }),
        )
      ).body;
      const patched = await admin.patch(`/v1/alert-rules/${made.id}`, {
        channels: { webhooks: ['whe_none'] },
      });
      expect([patched.status, locOf(patched)]).toEqual([422, ['body', 'channels', 'webhooks', 0]]);
      expect(await admin.delete(`/v1/policies/${p.id}`)).toMatchObject({
        status: 409,
        body: { detail: 'in_use' },
      });
      expect(await admin.delete(`/v1/webhook-endpoints/${hook.id}`)).toMatchObject({
        status: 409,
        body: { detail: 'in_use' },
      });
      expect((await admin.delete(`/v1/alert-rules/${made.id}`)).status).toBe(204);
      expect((await admin.delete(`/v1/webhook-endpoints/${hook.id}`)).status).toBe(204);
      // Another tenant's ids are as unknown as made-up ones.
      const { admin: stranger } = await h.newTenant();
      const foreign = await stranger.post('/v1/alert-rules', rule({ policy_id: other.id }));
      expect([foreign.status, locOf(foreign)]).toEqual([422, ['body', 'policy_id']]);
      expect((await stranger.get(`/v1/alert-rules/${made.id}`)).status).toBe(404);
    });
  });

  describe.each(['strict', 'fast'] as const)('alert events (%s policies)', (mode) => {
    // A tenant of their own: the rules made above (any policy, any subject) would match too.
    beforeAll(async () => {
      ({ admin, id: tenantId } = await h.newTenant());
    });
    let n = 0;
    /** A subject `acme:<n>` on a plan of daily and monthly quotas of one resource. */
    async function watched(daily: number, monthly: number) {
      n += 1;
      const { resource, policies, subject } = await subjectOnPlan(admin, `ev-${mode}-${n}`, {
        limits: { day: daily, month: monthly },
        mode,
        subject: `acme:${mode}-${n}`,
      });
      const { day, month } = policies;
      const consume = async (amount: number) =>
        (
          await admin.post('/v1/consume', {
            subject,
            items: [{ resource: resource.name, amount }],
          })
        ).body.allowed as boolean;
      const events = async () => {
        await flushLedgerStream(h);
        return (await admin.get(`/v1/alert-events?subject=${encodeURIComponent(subject)}`)).body;
      };
      return { resource, day, month, subject, consume, events };
    }

    it('records one event when usage crosses a rule’s threshold in a window, not one per consume; a denied consume crosses nothing', async () => {
      const w = await watched(100, 10_000);
      const rule = async (extra: Record<string, unknown>) =>
        (await admin.post('/v1/alert-rules', { name: 'r', channels: {}, ...extra })).body;
      const eighty = await rule({
        threshold_pct: 80,
        policy_id: w.day.id,
        subject_filter: 'acme:*',
      });
      const ninety = await rule({ threshold_pct: 90, resource_id: w.resource.id });
      await rule({ threshold_pct: 10, subject_filter: 'someone-else' });
      await rule({ threshold_pct: 10, policy_id: w.day.id, enabled: false });

      expect(await w.consume(79)).toBe(true);
      expect(await w.events()).toEqual([]);
      expect(await w.consume(1)).toBe(true);
      expect(await w.consume(5)).toBe(true);
      expect(await w.consume(20)).toBe(false);
      const first = await w.events();
      expect(first).toEqual([
        {
          id: expect.stringMatching(/^ale_/),
          rule_id: eighty.id,
          subject: w.subject,
          policy_id: w.day.id,
          window_id: expect.any(String),
          threshold_pct: 80,
          usage_pct: 80,
          suppressed: false,
          triggered_at: expect.any(String),
        },
      ]);
      expect(await w.consume(10)).toBe(true);
      const second = await w.events();
      expect(
        second.map((e: { rule_id: string; usage_pct: number }) => [e.rule_id, e.usage_pct]),
      ).toEqual([
        [ninety.id, 95],
        [eighty.id, 80],
      ]);
      // Another tenant sees none of them.
      const { admin: other } = await h.newTenant();
      expect((await other.get('/v1/alert-events')).body).toEqual([]);
    });

    it('records the crossings of a reserve (a hold is usage) and of a commit past its hold; a commit within its hold crosses nothing', async () => {
      const w = await watched(100, 10_000);
      const rule = (pct: number) =>
        admin.post('/v1/alert-rules', {
          name: `at ${pct}`,
          threshold_pct: pct,
          policy_id: w.day.id,
          channels: {},
        });
      await rule(50);
      await rule(90);
      const reserve = async (amount: number) =>
        (
          await admin.post('/v1/reserve', {
            subject: w.subject,
            items: [{ resource: w.resource.name, amount }],
            ttl_seconds: 600,
          })
        ).body;
      const commit = (id: string, amount: number) =>
        admin.post(`/v1/reservations/${id}/commit`, {
          actuals: [{ resource: w.resource.name, amount }],
        });
      const held = await reserve(60);
      expect(held.allowed).toBe(true);
      const pcts = async () =>
        (await w.events()).map((e: { threshold_pct: number; usage_pct: number }) => [
          e.threshold_pct,
          e.usage_pct,
        ]);
      expect(await pcts()).toEqual([[50, 60]]);
      // Within the hold: usage goes down to 40, nothing crosses.
      expect((await commit(held.reservation_id, 40)).status).toBe(200);
      expect(await pcts()).toEqual([[50, 60]]);
      // Past its hold: 40 + 10 held, committed at 55: usage 95 crosses 90.
      const second = await reserve(10);
      expect((await commit(second.reservation_id, 55)).status).toBe(200);
      expect(await pcts()).toEqual([
        [90, 95],
        [50, 60],
      ]);
    });

    it('records a crossing within the rule’s cooldown of the subject’s last event suppressed', async () => {
      const w = await watched(1_000, 10_000);
      const rule = (
        await admin.post('/v1/alert-rules', {
          name: 'half',
          threshold_pct: 50,
          resource_id: w.resource.id,
          cooldown_seconds: 3_600,
          channels: {},
        })
      ).body;
      expect(await w.consume(500)).toBe(true); // the day's window crosses 50%
      expect(await w.consume(500)).toBe(true); // the day is full, the month at 10%
      const events = async () =>
        (await w.events()).map((e: { policy_id: string; suppressed: boolean }) => [
          e.policy_id,
          e.suppressed,
        ]);
      expect(await events()).toEqual([[w.day.id, false]]);
      // The month crosses 50% within the hour: recorded, suppressed.
      const exempt = await admin.put(`/v1/subjects/${w.subject}/overrides`, {
        overrides: [{ policy_id: w.day.id, enabled: false }],
      });
      expect(exempt.status).toBe(200);
      expect(await w.consume(4_000)).toBe(true);
      expect(await events()).toEqual([
        [w.month.id, true],
        [w.day.id, false],
      ]);
      expect((await admin.delete(`/v1/alert-rules/${rule.id}`)).status).toBe(204);
      // A rule's events outlive it.
      expect(await events()).toHaveLength(2);
    });
  });

  describe.each(['strict', 'fast'] as const)('alert notices (%s policies)', (mode) => {
    beforeAll(async () => {
      ({ admin, id: tenantId } = await h.newTenant());
    });
    it('delivers alert.triggered, signed, to the rule’s webhook endpoints through the delivery engine, retrying a failed attempt; a disabled endpoint gets nothing', async () => {
      const n = `${mode}-${Date.now()}`;
      const { resource, policies, subject } = await subjectOnPlan(admin, `notice-${n}`, {
        limits: { day: 10 },
        mode,
      });
      const policy = policies.day;
      // Its own path: a delivery of another test still retrying to the receiver is not this one's.
      const path = `/notice-${n}`;
      const hook = await endpoint({ url: `${receiver.url}${path}` });
      const quiet = await endpoint({ url: `${receiver.url}${path}-quiet`, enabled: false });
      const rule = (
        await admin.post('/v1/alert-rules', {
          name: 'half',
          threshold_pct: 50,
          policy_id: policy.id,
          cooldown_seconds: 3_600,
          channels: { webhooks: [hook.id, quiet.id] },
        })
      ).body;
      await admin.post('/v1/alert-rules', {
        name: 'full',
        threshold_pct: 100,
        policy_id: policy.id,
        cooldown_seconds: 3_600,
        channels: { webhooks: [hook.id] },
      });
      let failFirst = true;
      receiver.respondWith((request) => {
        if (request.path !== path) return { status: 200 };
        const first = failFirst;
        failFirst = false;
        return { status: first ? 500 : 200 };
      });
      const consume = (amount: number) =>
        admin.post('/v1/consume', { subject, items: [{ resource: resource.name, amount }] });
      expect((await consume(5)).body.allowed).toBe(true);
      await flushLedgerStream(h);
      const [failed, delivered] = await receiver.waitForRequestsTo(path, 2);
      const payload = verifyStandardWebhook(hook.secret, delivered!.headers, delivered!.rawBody);
      expect(failed!.headers['webhook-id']).toBe(delivered!.headers['webhook-id']);
      const [event] = (await admin.get(`/v1/alert-events?subject=${subject}`)).body;
      expect(payload).toEqual({
        type: 'alert.triggered',
        timestamp: event.triggered_at,
        data: { ...event, alert_event_id: event.id, rule_name: 'half' },
      });
      expect(event).toMatchObject({ rule_id: rule.id, suppressed: false, usage_pct: 50 });
      const deliveryOf = async () =>
        (await admin.get(`/v1/webhook-deliveries?endpoint_id=${hook.id}`)).body.find(
          (d: { alert_event_id: string | null }) => d.alert_event_id === event.id,
        );
      const settled = await eventually(async () => {
        const d = await deliveryOf();
        return d?.status === 'delivered' ? d : undefined;
      });
      expect(settled).toMatchObject({
        event_type: 'alert.triggered',
        attempt_count: 2,
        last_status_code: 200,
        last_error: null,
        next_attempt_at: null,
      });
      // The disabled endpoint got nothing.
      expect((await admin.get(`/v1/webhook-deliveries?endpoint_id=${quiet.id}`)).body).toEqual([]);
      expect(receiver.requests.filter((r) => r.path === `${path}-quiet`)).toEqual([]);

      // The second rule crosses at 100%: its own notice, to the same endpoint.
      expect((await consume(5)).body.allowed).toBe(true);
      await flushLedgerStream(h);
      const [, , full] = await receiver.waitForRequestsTo(path, 3);
      expect(verifyStandardWebhook(hook.secret, full!.headers, full!.rawBody)).toMatchObject({
        type: 'alert.triggered',
        data: { rule_name: 'full', threshold_pct: 100, usage_pct: 100 },
      });
    });
    it('ends a notice dead: at once when the receiver answers 4xx, after its last attempt when it keeps failing', async () => {
      const n = `dead-${mode}-${Date.now()}`;
      const { resource, policies } = await subjectOnPlan(admin, n, { limits: { day: 10 }, mode });
      const policy = policies.day;
      const gone = await endpoint({ url: `${receiver.url}/gone-${n}` });
      const broken = await endpoint({ url: `${receiver.url}/broken-${n}` });
      await admin.post('/v1/alert-rules', {
        name: 'half',
        threshold_pct: 50,
        policy_id: policy.id,
        channels: { webhooks: [gone.id, broken.id] },
      });
      receiver.respondWith((request) => ({
        status: request.path.startsWith(`/gone-${n}`) ? 410 : 503,
      }));
      await admin.post('/v1/consume', {
        subject: n,
        items: [{ resource: resource.name, amount: 5 }],
      });
      await flushLedgerStream(h);
      const settled = (id: string) =>
        eventually(async () => {
          const [d] = (await admin.get(`/v1/webhook-deliveries?endpoint_id=${id}`)).body;
          return d?.status === 'dead' ? d : undefined;
        }, 60_000);
      expect(await settled(gone.id)).toMatchObject({ attempt_count: 1, last_status_code: 410 });
      // Waits of a second (support.ts): five attempts (one more than there are waits), then dead.
      expect(await settled(broken.id)).toMatchObject({
        attempt_count: 5,
        last_status_code: 503,
        next_attempt_at: null,
      });
      receiver.respondWith(() => ({ status: 200 }));
      // Five attempts through the delivery engine, each waited for up to the minute above.
    }, 120_000);
  });

  it('lists alert events newest first, by subject, up to limit (1 to 500)', async () => {
    expect((await admin.get('/v1/alert-events?limit=500')).status).toBe(200);
    expect((await admin.get('/v1/alert-events?limit=501')).status).toBe(422);
    expect((await admin.get('/v1/alert-events?limit=0')).status).toBe(422);
    const all = (await admin.get('/v1/alert-events')).body as { triggered_at: string }[];
    expect(all.length).toBeGreaterThan(0);
    const times = all.map((e) => e.triggered_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect((await admin.get('/v1/alert-events?limit=1')).body).toHaveLength(1);
  });

  it('needs alerts:* and webhooks:* scopes, each read apart from its write', async () => {
    const mint = async (scopes: string[]) => {
      const minted = await admin.post('/v1/api-keys', { scopes, actor: 'scoped@example.test' });
      expect(minted.status).toBe(201);
      return h.as(minted.body.key);
    };
    const readers = await mint(['alerts:read', 'webhooks:read']);
    expect((await readers.get('/v1/alert-rules')).status).toBe(200);
    expect((await readers.get('/v1/webhook-endpoints')).status).toBe(200);
    expect((await readers.get('/v1/webhook-deliveries')).status).toBe(200);
    for (const reply of [
      await readers.post('/v1/alert-rules', { name: 'scoped', threshold_pct: 50, channels: {} }),
      await readers.post('/v1/webhook-endpoints', { url: receiver.url }),
    ])
      expect(reply).toMatchObject({ status: 403, body: { detail: 'insufficient_scope' } });
    const writers = await mint(['alerts:write', 'webhooks:write']);
    expect((await writers.post('/v1/webhook-endpoints', { url: receiver.url })).status).toBe(201);
    expect((await writers.get('/v1/webhook-endpoints')).status).toBe(403);
    expect((await writers.get('/v1/alert-rules')).status).toBe(403);
  });
});
