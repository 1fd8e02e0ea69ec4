import fs from 'node:fs';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { sql } from '../../../db/pool';
import { createRedis, closeRedis } from '../../../db/redis';
import { createLogObjects } from '../../../services/runs/log-objects';
import type { LogPage } from '../../../services/runs/logs';
import { logCacheKeys, logFilePath } from '../../../services/runs/log-store';
import { createRetentionActivities } from '../../../activities/runs/retention';
import { loadConfig } from '../../../platform/config';
import { eventually } from '../../support/services';
import { ThrowawaySeaweedFS } from '../../support/throwaway-backends';
import { builtTool } from '../../support/built-tools';
import { WORKER_READY_TIMEOUT_MS, ownWorker } from './own-worker';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from './support';
import { ALL_WORKFLOW_PERMISSIONS, dagClient, edge, shNode } from './dag-support';

/**
 * Run logs in an S3-compatible object store (RUNS_LOG_S3_*), on a real one: SeaweedFS, built by
 * `scripts/stack seaweedfs-path` (SEAWEEDFS, set by scripts/test). The worker uploads a run's log
 * in chunks as it captures it; any runs API pages it from there; retention deletes it.
 */
jest.setTimeout(180_000);

const BUCKET = 'run-logs-test';

describe('run logs in an object store', () => {
  let store: ThrowawaySeaweedFS;
  let s3: S3Client;
  let env: Record<string, string>;
  let own: ReturnType<typeof ownWorker>;
  let h: Harness;

  beforeAll(async () => {
    store = await ThrowawaySeaweedFS.create(builtTool('SEAWEEDFS', 'seaweedfs-path'));
    s3 = new S3Client({
      endpoint: store.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: {
        accessKeyId: ThrowawaySeaweedFS.ACCESS_KEY_ID,
        secretAccessKey: ThrowawaySeaweedFS.SECRET_ACCESS_KEY,
      },
    });
    await eventually(
      () =>
        s3.send(new CreateBucketCommand({ Bucket: BUCKET })).then(
          () => true,
          () => undefined,
        ),
      60_000,
      500,
    );
    env = store.env(BUCKET);
    own = ownWorker('s3logs', env);
    h = await own.start();
  }, WORKER_READY_TIMEOUT_MS + 60_000);
  afterAll(async () => {
    await own?.stop();
    s3?.destroy();
    await store?.stop();
  });

  const objectsOf = async (prefix: string) =>
    (
      (await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))).Contents ?? []
    ).map((o) => o.Key!);

  it("uploads a run's log while it runs, and the API pages and tails it from the store with no file on disk", async () => {
    const { tenantId, key } = await newTenant(h.pool);
    const api = client(h.service.url, key);
    // 2,500 lines (three chunks), a pause long enough for the growing chunk's upload, then more.
    const script =
      'i=1; while [ $i -le 2500 ]; do echo "line $i"; i=$((i+1)); done; echo oops >&2; sleep 6; echo "line 2501"';
    const { body } = await api.submit({ image: IMAGE, command: ['sh', '-c', script] });
    const trackId = body.track_id;
    await api.waitFor(trackId, ['running'], 60_000);
    const stdout = `${tenantId}/${trackId}/stdout/`;
    // Before the run ends, its chunks are in the store: the two full ones and the growing one.
    const whileRunning = await eventually(async () => {
      const keys = await objectsOf(stdout);
      return keys.length === 3 ? keys : undefined;
    }, 20_000);
    expect((await api.status(trackId)).body.state).toBe('running');
    expect(whileRunning).toEqual([0, 1, 2].map((i) => `${stdout}${String(i).padStart(9, '0')}`));

    const run = await api.waitFor(trackId, ['exited'], 60_000);
    expect(run.stdout_file).toBe(`s3://${BUCKET}/${stdout}`);
    expect(fs.existsSync(logFilePath(config.runs.logDir, tenantId, trackId, 'stdout'))).toBe(false);

    // The live tail gone (its cache expired), every page comes from the store.
    const redis = createRedis(config, 'runs:');
    await new Promise((resolve) => redis.once('ready', resolve));
    await redis.del(...logCacheKeys(trackId));
    await closeRedis(redis);
    const page = (query: string) =>
      api.call<LogPage>('GET', `/api/v1/runs/${trackId}/logs${query}`);
    const first = await page('?stream=stdout&since=0&limit=1000');
    expect(first.headers.get('x-log-source')).toBe('object');
    expect(first.body.lines).toHaveLength(1000);
    expect(first.body.lines[0]).toBe('line 1');
    const across = await page('?stream=stdout&since=990&limit=20');
    expect(across.body.lines).toEqual(Array.from({ length: 20 }, (_, i) => `line ${991 + i}`));
    expect(across.body.next_since).toBe(1010);
    const tail = await page('?stream=stdout&limit=2');
    expect(tail.body).toEqual({ lines: ['line 2500', 'line 2501'], next_since: 2501, eof: true });
    expect((await page('?stream=stderr')).body.lines).toEqual(['oops']);
    // `both` in Docker's arrival order (stderr's line somewhere among the first 2,500): 2,502 lines.
    expect((await page('?stream=both&limit=1')).body).toEqual({
      lines: ['line 2501'],
      next_since: 2502,
      eof: true,
    });

    // Another runs API, as on another host, reads the same.
    const other = await startHarness(env);
    try {
      const there = client(other.service.url, key);
      const read = await there.call<LogPage>(
        'GET',
        `/api/v1/runs/${trackId}/logs?since=2499&stream=stdout`,
      );
      expect(read.body.lines).toEqual(['line 2500', 'line 2501']);
    } finally {
      await other.close();
    }
  });

  it("reads a DAG node's output from the store: inputs_from passes it to the next node", async () => {
    const { key } = await newTenant(h.pool, { permissions: ALL_WORKFLOW_PERMISSIONS });
    const dag = dagClient(h.service.url, key);
    const id = await dag.submit({
      nodes: [
        shNode('first', 'echo not the output; echo \'{"n": 1}\''),
        shNode('second', 'echo "{\\"got\\": $SVC_INPUT_FIRST}"', { inputs_from: ['first'] }),
      ],
      edges: [edge('first', 'second')],
    });
    expect((await dag.waitForState(id)).state).toBe('succeeded');
    expect((await dag.node(id, 'first')).output).toEqual({ n: 1 });
    expect((await dag.node(id, 'second')).output).toEqual({ got: { n: 1 } });
  });

  it("deletes a run's objects when retention deletes the run", async () => {
    const { tenantId, key } = await newTenant(h.pool);
    const api = client(h.service.url, key);
    const { body } = await api.submit({ image: IMAGE, command: ['echo', 'kept a while'] });
    const trackId = body.track_id;
    await api.waitFor(trackId, ['exited'], 60_000);
    expect(await objectsOf(`${tenantId}/${trackId}/`)).not.toEqual([]);
    await h.pool.query(sql.unsafe`
      UPDATE runs.runs SET finished_at = now() - interval '400 days' WHERE track_id = ${trackId}`);
    const settings = loadConfig({ ...process.env, ...env });
    const redis = createRedis(config, '');
    const retention = createRetentionActivities({
      pool: h.pool,
      redis,
      logDir: config.runs.logDir,
      logObjects: createLogObjects(settings.runs.logObjects!),
    });
    try {
      await eventually(async () =>
        (await retention.purgeExpiredRuns({ batchSize: 1000 })) === 0 ? true : undefined,
      );
    } finally {
      await closeRedis(redis);
    }
    expect(await objectsOf(`${tenantId}/${trackId}/`)).toEqual([]);
    expect((await api.status(trackId)).status).toBe(404);
  });
});
