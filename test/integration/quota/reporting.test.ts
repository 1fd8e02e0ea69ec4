/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call -- JSON replies in tests */
import { startQuota, type QuotaClient, type QuotaHarness } from './support';

describe('quota: the ledger and the usage summary', () => {
  let h: QuotaHarness;
  let admin: QuotaClient;
  let resource: string;
  beforeAll(async () => {
    h = await startQuota();
    ({ admin } = await h.newTenant());
    resource = (await admin.post('/v1/resources', { name: 'tokens' })).body.name;
    const policy = (
      await admin.post('/v1/policies', {
        name: 'monthly',
        resource_id: (await admin.get('/v1/resources')).body[0].id,
        kind: 'quota',
        limit_amount: 1_000,
        window_kind: 'fixed',
        window_unit: 'month',
        enforcement_mode: 'strict',
      })
    ).body;
    const plan = (await admin.post('/v1/plans', { name: 'p', policy_ids: [policy.id] })).body;
    for (const subject of ['team-a/1', 'team-a/2', 'team-b/1'])
      await admin.put(`/v1/subjects/${encodeURIComponent(subject)}/assignment`, {
        plan_id: plan.id,
      });
  });
  afterAll(async () => {
    await h.close();
  });

  const consume = (subject: string, amount: number) =>
    admin.post('/v1/consume', { subject, items: [{ resource, amount }] });

  it('lists entries in order with their event ids, filtered and paged, bounded by subject_prefix', async () => {
    const events = [];
    for (const [subject, amount] of [
      ['team-a/1', 5],
      ['team-a/2', 7],
      ['team-b/1', 11],
    ] as const)
      events.push((await consume(subject, amount)).body.event_id);
    await admin.post('/v1/refund', { subject: 'team-a/1', items: [{ resource, amount: 2 }] });

    const all = await admin.get('/v1/ledger');
    expect(
      all.body.entries.map((e: { subject: string; amount: number; entry_type: string }) => [
        e.subject,
        e.amount,
        e.entry_type,
      ]),
    ).toEqual([
      ['team-a/1', 5, 'consume'],
      ['team-a/2', 7, 'consume'],
      ['team-b/1', 11, 'consume'],
      ['team-a/1', -2, 'refund'],
    ]);
    expect(all.body.entries.slice(0, 3).map((e: { event_id: string }) => e.event_id)).toEqual(
      events,
    );
    const first = await admin.get('/v1/ledger?limit=3');
    const rest = await admin.get(`/v1/ledger?limit=3&cursor=${first.body.next_cursor}`);
    expect(rest.body).toMatchObject({ entries: [{ entry_type: 'refund' }], next_cursor: null });
    expect((await admin.get('/v1/ledger?subject=team-a%2F1')).body.entries).toHaveLength(2);

    const teamA = h.as(
      (
        await admin.post('/v1/api-keys', {
          scopes: ['usage:read'],
          actor: 'a',
          constraints: { subject_prefix: 'team-a/' },
        })
      ).body.key,
    );
    expect(
      (await teamA.get('/v1/ledger')).body.entries.map((e: { subject: string }) => e.subject),
    ).toEqual(['team-a/1', 'team-a/2', 'team-a/1']);
    expect(await teamA.get('/v1/ledger?subject=team-b%2F1')).toMatchObject({
      status: 403,
      body: { detail: 'constraint_violation' },
    });
    for (const query of ['limit=0', 'limit=501', 'cursor=x', 'from=not-a-date'])
      expect((await admin.get(`/v1/ledger?${query}`)).status).toBe(422);
  });

  it('sums consumed, refunded and net per UTC day or hour, subject and resource', async () => {
    const summary = await admin.get('/v1/usage/summary?subject=team-a%2F1');
    const today = new Date().toISOString().slice(0, 10);
    expect(summary.body).toEqual([
      {
        granularity: 'day',
        start: `${today}T00:00:00.000Z`,
        end: expect.any(String),
        subject: 'team-a/1',
        resource,
        consumed: 5,
        refunded: 2,
        net: 3,
        entries: 2,
      },
    ]);
    const hourly = await admin.get('/v1/usage/summary?granularity=hour');
    expect(hourly.body.map((r: { net: number }) => r.net).sort()).toEqual([11, 3, 7].sort());
    expect((await admin.get('/v1/usage/summary?granularity=week')).status).toBe(422);
    const past = await admin.get('/v1/usage/summary?to=2020-01-01T00:00:00Z');
    expect(past.body).toEqual([]);
  });
});
