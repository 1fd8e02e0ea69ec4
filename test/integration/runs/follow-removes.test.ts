import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ulid } from 'ulid';
import { createDocker } from '../../../platform/docker';
import { pullImage } from '../../../activities/docker/containers';
import {
  createRunDockerActivities,
  type ContainerOutcome,
} from '../../../activities/runs/run-docker';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';
import {
  CONTAINER_OUTCOME_KEPT_HOURS,
  findContainerOutcome,
  keepContainerOutcome,
  purgeContainerOutcomes,
} from '../../../db/runs/container-outcomes';
import { createRedis, type Redis } from '../../../db/redis';
import { runContainerName } from '../../../contracts/runs/run';
import { IMAGE, config } from './support';

/**
 * With run-fast-path the follow activity removes the run's container once it has exited. A
 * worker that dies after the removal but before the activity's completion reaches Temporal has
 * its activity retried: the retry must answer the same outcome, not `ContainerLost`.
 */
describe('the follow activity that removes the container', () => {
  const docker = createDocker(config);
  let pool: DatabasePool;
  let redis: Redis;
  let logDir: string;
  beforeAll(async () => {
    pool = await createDatabasePool(config, { applicationName: 'runs-test', maximumPoolSize: 2 });
    redis = createRedis(config, '');
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runs-follow-'));
    await pullImage(docker, IMAGE);
  });
  afterAll(async () => {
    await pool.end();
    redis.disconnect();
    fs.rmSync(logDir, { recursive: true, force: true });
  });

  it('when it is retried after removing the container, then it answers the kept outcome', async () => {
    const trackId = ulid();
    const activities = createRunDockerActivities({
      docker,
      pool,
      redis,
      workerId: 'follow-removes',
      logDir,
      logObjects: null,
      metering: null,
    });
    const container = await docker.createContainer({
      name: runContainerName(trackId),
      Image: IMAGE,
      Cmd: ['sh', '-c', 'echo one; echo two >&2; exit 3'],
    });
    await container.start();
    const input = { trackId, tenantId: 't-follow', memoryLimitMb: 64, removeOnExit: true };

    const follow = (i: typeof input): Promise<ContainerOutcome> =>
      new MockActivityEnvironment().run(
        (arg: typeof input) => activities.followRunContainer(arg),
        i,
      );
    const first = await follow(input);
    expect(first).toMatchObject({ exitCode: 3, stdoutBytes: 4, stderrBytes: 4, removed: true });
    await expect(container.inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(fs.readFileSync(first.stdoutFile, 'utf8')).toBe('one\n');

    // Kept in Postgres, committed before the removal (nothing of it in Redis).
    expect(await findContainerOutcome(pool, trackId)).toEqual(first);
    expect(await redis.exists(`runs:outcome:${trackId}`)).toBe(0);
    const retried = await follow(input);
    expect(retried).toEqual(first);
    // The retry left the captured files alone.
    expect(fs.readFileSync(first.stdoutFile, 'utf8')).toBe('one\n');

    // Without removeOnExit (the older shapes), a container that is gone is lost.
    await expect(follow({ ...input, removeOnExit: false })).rejects.toMatchObject({
      type: 'ContainerLost',
    });
  }, 60_000);

  it('when an outcome has been kept longer than a day, then the retention purge deletes it and keeps the younger ones', async () => {
    const [old, young] = [ulid(), ulid()];
    const kept: ContainerOutcome = {
      exitCode: 0,
      error: null,
      stdoutBytes: 0,
      stderrBytes: 0,
      resultSummary: '',
      stdoutFile: 'stdout.log',
      stderrFile: 'stderr.log',
      removed: true,
    };
    await keepContainerOutcome(pool, old, kept);
    await keepContainerOutcome(pool, young, kept);
    await pool.query(sql.unsafe`
      UPDATE runs.container_outcomes
      SET kept_at = now() - make_interval(hours => ${CONTAINER_OUTCOME_KEPT_HOURS + 1})
      WHERE track_id = ${old}`);
    await purgeContainerOutcomes(pool, 1_000);
    expect(await findContainerOutcome(pool, old)).toBeNull();
    expect(await findContainerOutcome(pool, young)).toEqual(kept);
  });
});
