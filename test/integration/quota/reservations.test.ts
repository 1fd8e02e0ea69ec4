/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import { sql } from '../../../db/pool';
import { startQuota, type QuotaClient, type QuotaHarness } from './support';

// Holds on a fast policy live in the subject's Redis state, on a strict one in Postgres rows.
describe.each(['strict', 'fast'] as const)(
  'quota: reservations (reserve, get, commit, release, expiry) on %s policies',
  (mode) => {
    let h: QuotaHarness;
    let admin: QuotaClient;
    let tenantId: string;
    let seq = 0;
    beforeAll(async () => {
      h = await startQuota();
      ({ admin, id: tenantId } = await h.newTenant());
    });
    afterAll(async () => {
      await h.close();
    });

    /** A subject on a plan with a daily quota of `limit` (in this mode) on a new resource. */
    async function subject(limit: number) {
      const n = ++seq;
      const res = (await admin.post('/v1/resources', { name: `gpu-${n}` })).body;
      const policy = (
        await admin.post('/v1/policies', {
          name: `daily-${n}`,
          resource_id: res.id,
          kind: 'quota',
          limit_amount: limit,
          window_kind: 'fixed',
          window_unit: 'day',
          enforcement_mode: mode,
        })
      ).body;
      const plan = (await admin.post('/v1/plans', { name: `plan-${n}`, policy_ids: [policy.id] }))
        .body;
      await admin.put(`/v1/subjects/s-${n}/assignment`, { plan_id: plan.id });
      const used = async () =>
        (await admin.get(`/v1/subjects/s-${n}/usage`)).body.usage[0].used as number;
      return { subject: `s-${n}`, resource: res.name as string, used };
    }
    const reserveBody = (s: { subject: string; resource: string }, amount: number, extra = {}) => ({
      subject: s.subject,
      items: [{ resource: s.resource, amount }],
      ...extra,
    });

    it('holds an amount, settles it with actuals (delta and overage), and refuses to settle twice', async () => {
      const s = await subject(10);
      const held = await admin.post('/v1/reserve', reserveBody(s, 6));
      expect(held).toMatchObject({
        status: 201,
        body: {
          allowed: true,
          reservation_id: expect.stringMatching(/^rsv_/),
          status: 'held',
          expires_at: expect.any(String),
        },
      });
      expect(await s.used()).toBe(6);
      const denied = await admin.post('/v1/reserve', reserveBody(s, 5));
      expect(denied).toMatchObject({ status: 200, body: { allowed: false, reservation_id: null } });

      const id = held.body.reservation_id;
      const committed = await admin.post(`/v1/reservations/${id}/commit`, {
        actuals: [{ resource: s.resource, amount: 12 }],
      });
      expect(committed.body).toMatchObject({
        reservation_id: id,
        status: 'committed',
        event_id: expect.stringMatching(/^evt_/),
        adjustments: [{ resource: s.resource, held: 6, actual: 12, delta: 6, overage: 2 }],
      });
      expect(await s.used()).toBe(12);
      expect(await admin.post(`/v1/reservations/${id}/commit`, { actuals: [] })).toMatchObject({
        status: 409,
        body: { detail: 'reservation_settled' },
      });
      expect(await admin.post(`/v1/reservations/${id}/release`, {})).toMatchObject({
        status: 409,
        body: { detail: 'reservation_settled' },
      });
      const got = await admin.get(`/v1/reservations/${id}`);
      expect(got.body).toMatchObject({
        status: 'committed',
        settle_event_id: committed.body.event_id,
        adjustments: committed.body.adjustments,
      });
      const ledger = await h.pool.any(sql.unsafe`
      SELECT entry_type, amount, reservation_id FROM quota.ledger_entries
      WHERE tenant_id = ${tenantId} AND subject = ${s.subject} ORDER BY id`);
      expect(ledger).toEqual([
        { entry_type: 'reserve', amount: '6', reservation_id: id },
        { entry_type: 'commit', amount: '6', reservation_id: id },
      ]);
    });

    it('commits what was held when no actual is given, 0 to give it all back, and replays a keyed commit', async () => {
      const s = await subject(100);
      const a = (await admin.post('/v1/reserve', reserveBody(s, 10))).body.reservation_id;
      const b = (await admin.post('/v1/reserve', reserveBody(s, 20))).body.reservation_id;
      expect((await admin.post(`/v1/reservations/${a}/commit`, {})).body.adjustments).toEqual([
        { resource: s.resource, held: 10, actual: 10, delta: 0, overage: 0 },
      ]);
      const body = { actuals: [{ resource: s.resource, amount: 0 }], idempotency_key: 'c-1' };
      const first = await admin.post(`/v1/reservations/${b}/commit`, body);
      expect((await admin.post(`/v1/reservations/${b}/commit`, body)).body).toEqual(first.body);
      expect(await s.used()).toBe(10);
      const c = (await admin.post('/v1/reserve', reserveBody(s, 1))).body.reservation_id;
      expect(
        await admin.post(`/v1/reservations/${c}/commit`, {
          actuals: [{ resource: 'other', amount: 1 }],
        }),
      ).toMatchObject({
        status: 422,
        body: { detail: [{ loc: ['body', 'actuals', 0, 'resource'], type: 'not_reserved' }] },
      });
    });

    it('releases a hold once (a second release answers it as it is)', async () => {
      const s = await subject(10);
      const id = (await admin.post('/v1/reserve', reserveBody(s, 7))).body.reservation_id;
      const released = await admin.post(`/v1/reservations/${id}/release`, {});
      expect(released.body).toMatchObject({
        reservation_id: id,
        status: 'released',
        released: [{ resource: s.resource, amount: 7 }],
      });
      expect(await s.used()).toBe(0);
      expect((await admin.post(`/v1/reservations/${id}/release`, {})).body).toEqual(released.body);
      expect(await admin.post(`/v1/reservations/${id}/commit`, {})).toMatchObject({
        status: 409,
        body: { detail: 'reservation_settled' },
      });
    });

    it('expires an unsettled reservation: commit after expires_at is 409 and never settles the released hold; the job expires the rest', async () => {
      const s = await subject(10);
      const late = (await admin.post('/v1/reserve', reserveBody(s, 4, { ttl_seconds: 1 }))).body
        .reservation_id;
      const forgotten = (await admin.post('/v1/reserve', reserveBody(s, 5, { ttl_seconds: 1 })))
        .body.reservation_id;
      expect(await s.used()).toBe(9);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      expect(
        await admin.post(`/v1/reservations/${late}/commit`, {
          actuals: [{ resource: s.resource, amount: 4 }],
        }),
      ).toMatchObject({
        status: 409,
        body: { detail: 'reservation_expired' },
      });
      expect(await s.used()).toBe(5);
      const job = await h.operator.post('/v1/ops/jobs/reservation-expiry');
      expect(job.body).toMatchObject({ job: 'reservation-expiry', ok: true });
      expect(job.body.expired).toBeGreaterThanOrEqual(1);
      expect((await admin.get(`/v1/reservations/${forgotten}`)).body.status).toBe('expired');
      expect(await s.used()).toBe(0);
      expect(await admin.post(`/v1/reservations/${late}/release`, {})).toMatchObject({
        status: 409,
        body: { detail: 'reservation_expired' },
      });
    });

    it('bounds ttl_seconds and actuals, and answers another tenant 404', async () => {
      const s = await subject(10);
      for (const ttl of [0, 86_401])
        expect(
          (await admin.post('/v1/reserve', reserveBody(s, 1, { ttl_seconds: ttl }))).status,
        ).toBe(422);
      const id = (await admin.post('/v1/reserve', reserveBody(s, 1, { ttl_seconds: 86_400 }))).body
        .reservation_id;
      expect(
        (
          await admin.post(`/v1/reservations/${id}/commit`, {
            actuals: [{ resource: s.resource, amount: -1 }],
          })
        ).status,
      ).toBe(422);
      expect((await admin.post(`/v1/reservations/${id}/release`, { reason: 'x' })).status).toBe(
        422,
      );
      const other = await h.newTenant();
      expect(await other.admin.get(`/v1/reservations/${id}`)).toMatchObject({
        status: 404,
        body: { detail: 'reservation_not_found' },
      });
      expect(await other.admin.post(`/v1/reservations/${id}/release`, {})).toMatchObject({
        status: 404,
      });
    });
  },
);
