/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call -- JSON replies in tests */
import { startQuota, type QuotaHarness } from './support';

describe('quota: GET /v1/audit', () => {
  let h: QuotaHarness;
  beforeAll(async () => {
    h = await startQuota();
  });
  afterAll(async () => {
    await h.close();
  });

  it("pages through the tenant's own audit in seq order, filtered by actor, action and time, with before and after", async () => {
    const { admin, adminKey } = await h.newTenant();
    const other = await h.newTenant();
    await other.admin.post('/v1/resources', { name: 'elsewhere' });
    const start = new Date().toISOString();
    const res = (await admin.post('/v1/resources', { name: 'r1' })).body;
    await admin.patch(`/v1/resources/${res.id}`, { description: 'changed' });
    await admin.post('/v1/resources', { name: 'r2' });

    const all = await admin.get(`/v1/audit?from=${encodeURIComponent(start)}`);
    expect(all.body.entries.map((e: { action: string }) => e.action)).toEqual([
      'resource.create',
      'resource.update',
      'resource.create',
    ]);
    const seqs = all.body.entries.map((e: { seq: number }) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(all.body.entries[1]).toMatchObject({
      actor: adminKey.actor,
      entity_type: 'resource',
      entity_id: res.id,
      before: { description: '' },
      after: { description: 'changed' },
    });

    const first = await admin.get(`/v1/audit?from=${encodeURIComponent(start)}&limit=2`);
    expect(first.body.entries).toHaveLength(2);
    const second = await admin.get(
      `/v1/audit?from=${encodeURIComponent(start)}&limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body).toMatchObject({
      entries: [{ action: 'resource.create' }],
      next_cursor: null,
    });
    expect((await admin.get('/v1/audit?action=resource.update')).body.entries).toHaveLength(1);
    expect((await admin.get(`/v1/audit?actor=nobody`)).body.entries).toEqual([]);
    expect(
      (
        await admin.get(
          `/v1/audit?to=${encodeURIComponent(start)}&from=${encodeURIComponent(start)}`,
        )
      ).body.entries,
    ).toEqual([]);
  });

  it('bounds its query (limit 1..500, real instants, cursors it gave) and needs audit:read', async () => {
    const { admin } = await h.newTenant();
    for (const query of [
      'limit=0',
      'limit=501',
      'from=2026-02-30T00:00:00Z',
      'cursor=abc',
      'limit=x',
    ])
      expect((await admin.get(`/v1/audit?${query}`)).status).toBe(422);
    for (const query of ['limit=1', 'limit=500', 'from=2026-11-24T10:00:00%2B02:00'])
      expect((await admin.get(`/v1/audit?${query}`)).status).toBe(200);
    const noAudit = h.as(
      (await admin.post('/v1/api-keys', { scopes: ['catalog:read'], actor: 'x' })).body.key,
    );
    expect(await noAudit.get('/v1/audit')).toMatchObject({
      status: 403,
      body: { detail: 'insufficient_scope' },
    });
  });
});
