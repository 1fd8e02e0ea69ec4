import { IMAGE, client, newTenant, startHarness, type Harness } from './support';

/**
 * from_ts and to_ts of GET /runs/{track_id}/utilization are any instant the document allows,
 * year 0000 included (1 BC, which Postgres timestamps cannot hold).
 */
describe('utilization range bounds', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('when a bound lies before year 1, then the range is served (no 500)', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    // Deferred: the run exists, no container is made for it.
    const run = await api.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' });
    const at = (query: string) =>
      api.call('GET', `/api/v1/runs/${run.body.track_id}/utilization?${query}`);
    const early = '0000-06-01T00:00:00Z';
    expect(await Promise.all([at(`from_ts=${early}`), at(`to_ts=${early}`)])).toEqual([
      expect.objectContaining({ status: 200, body: { samples: [] } }),
      expect.objectContaining({ status: 200, body: { samples: [] } }),
    ]);
  });
});
