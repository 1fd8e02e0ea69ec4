import { sql, type DatabasePool } from '../../../db/pool';
import { getRunStatus } from '../../../services/runs/reads';
import type { PlatformDeps } from '../../../platform/deps';
import { IMAGE, client, newTenant, startHarness, type Harness } from './support';

/**
 * GET /runs/{track_id} reads the run, then counts its queue position. A dispatcher that moves
 * the run out of `scheduled` in between (schemathesis caught one) must not make the answer say
 * `scheduled` with queue_position 0, which the document's minimum of 1 forbids.
 */
describe('run status read during a dispatch', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  /** h.pool, but the run is dispatched just before the first count (queuePosition's query). */
  function dispatchingBeforeCount(trackId: string): DatabasePool {
    let dispatched = false;
    return new Proxy(h.pool, {
      get(pool, property, receiver) {
        if (property !== 'oneFirst') return Reflect.get(pool, property, receiver) as unknown;
        return async (query: Parameters<DatabasePool['oneFirst']>[0]) => {
          if (!dispatched) {
            dispatched = true;
            await pool.query(
              sql.unsafe`UPDATE runs.runs SET state = 'queued' WHERE track_id = ${trackId}`,
            );
          }
          return (await pool.oneFirst(query)) as unknown;
        };
      },
    });
  }

  it('when the run leaves scheduled between the reads, then state and position agree', async () => {
    const { key, tenantId } = await newTenant(h.pool);
    // Deferred: its workflow waits, nothing else moves the row.
    const run = await client(h.service.url, key).submit({
      image: IMAGE,
      scheduled_start: '2999-01-01T00:00:00Z',
    });
    const trackId = run.body.track_id;
    const deps = { pool: dispatchingBeforeCount(trackId) } as unknown as PlatformDeps;
    const status = await getRunStatus(deps, tenantId, trackId);
    expect([status.state, status.scheduling_info.queue_position]).toEqual(['queued', null]);
  });
});
