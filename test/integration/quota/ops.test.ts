/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call -- JSON replies in tests */
import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import Ajv2020 from 'ajv/dist/2020';
import { sql } from '../../../db/pool';
import { createTemporalClient } from '../../../platform/temporal';
import { JOB_NAMES, jobScheduleId, jobWorkflowId } from '../../../contracts/quota/jobs';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { REPO_ROOT } from '../../support/stack-env';
import { config, startQuota, type QuotaHarness } from './support';

/** The release a user names: package.json's, which every probe reports. */
const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

describe('quota: background jobs and their probes', () => {
  let h: QuotaHarness;
  beforeAll(async () => {
    h = await startQuota();
  });
  afterAll(async () => {
    await h.close();
  });

  it('runs a named job on Temporal on demand and answers its report; the sweeps delete only what is past its time', async () => {
    const tenant = await h.newTenant();
    await h.pool.query(sql.unsafe`
      INSERT INTO quota.counters (tenant_id, subject, policy_id, window_key, used, expires_at) VALUES
        (${tenant.id}, 's', 'pol_x', 'old', 5, now() - interval '2 days'),
        (${tenant.id}, 's', 'pol_x', 'current', 5, now() + interval '1 hour')`);
    await h.pool.query(sql.unsafe`
      INSERT INTO quota.idempotency (tenant_id, endpoint, key, request_hash, status, response, created_at) VALUES
        (${tenant.id}, 'consume', 'old', '\\x00', 200, '{}', now() - interval '25 hours'),
        (${tenant.id}, 'consume', 'new', '\\x00', 200, '{}', now())`);

    const counters = await h.operator.post('/v1/ops/jobs/counter-sweep');
    expect(counters).toMatchObject({
      status: 200,
      body: { job: 'counter-sweep', ok: true, trigger: 'manual', counters: expect.any(Number) },
    });
    expect(counters.body.counters).toBeGreaterThanOrEqual(1);
    const idempotency = await h.operator.post('/v1/ops/jobs/idempotency-sweep');
    expect(idempotency.body).toMatchObject({
      job: 'idempotency-sweep',
      ok: true,
      records: expect.any(Number),
    });
    expect(
      await h.pool.anyFirst(
        sql.unsafe`SELECT window_key FROM quota.counters WHERE tenant_id = ${tenant.id}`,
      ),
    ).toEqual(['current']);
    expect(
      await h.pool.anyFirst(
        sql.unsafe`SELECT key FROM quota.idempotency WHERE tenant_id = ${tenant.id}`,
      ),
    ).toEqual(['new']);

    // Job runs: past 7 days they go, but each job's latest success (its health reads it).
    const [busy, quiet] = [`sweep-a-${process.pid}-`, `sweep-b-${process.pid}-`];
    await h.pool.query(sql.unsafe`
      INSERT INTO quota.job_runs (task_queue_prefix, job, trigger, ok, started_at, finished_at, report)
      SELECT prefix, 'counter-sweep', 'schedule', ok, now() - age, now() - age, '{}'
      FROM (VALUES (${busy}, true, interval '10 days'), (${busy}, false, interval '9 days'),
                   (${busy}, true, interval '1 day'), (${quiet}, true, interval '10 days'))
        AS r(prefix, ok, age)`);
    const runs = await h.operator.post('/v1/ops/jobs/job-run-sweep');
    expect(runs.body).toMatchObject({ job: 'job-run-sweep', ok: true });
    expect(runs.body.runs).toBeGreaterThanOrEqual(2);
    expect(
      await h.pool.any(sql.unsafe`
        SELECT task_queue_prefix AS prefix, ok, extract(day FROM now() - finished_at)::int AS days
        FROM quota.job_runs WHERE task_queue_prefix IN (${busy}, ${quiet}) ORDER BY 1, 3`),
    ).toEqual([
      { prefix: busy, ok: true, days: 1 },
      { prefix: quiet, ok: true, days: 10 },
    ]);
    await h.pool.query(
      sql.unsafe`DELETE FROM quota.job_runs WHERE task_queue_prefix IN (${busy}, ${quiet})`,
    );

    const listed = await h.operator.get('/v1/ops/jobs?limit=1');
    expect(listed.body.runs).toEqual([runs.body]);
    expect(listed.body.jobs.map((j: { name: string }) => j.name)).toEqual(JOB_NAMES);
    expect(await h.operator.post('/v1/ops/jobs/nope')).toMatchObject({
      status: 404,
      body: { detail: 'job_not_found' },
    });
    expect(await tenant.admin.post('/v1/ops/jobs/counter-sweep')).toMatchObject({ status: 403 });
    for (const limit of ['0', '501'])
      expect((await h.operator.get(`/v1/ops/jobs?limit=${limit}`)).status).toBe(422);

    if (process.env.RECORD_HISTORIES === '1') {
      const temporal = createTemporalClient(config);
      try {
        const handle = await temporal.workflow.start('quotaJobWorkflow', {
          workflowId: jobWorkflowId('counter-sweep', `recorded-${process.pid}`),
          taskQueue: taskQueues(config.taskQueuePrefix).quota,
          args: [{ job: 'counter-sweep', trigger: 'manual' }],
        });
        await handle.result();
        const file = path.join(__dirname, '../../histories/quota/job-counter-sweep.json');
        fs.writeFileSync(file, historyToJSON(await handle.fetchHistory()));
      } finally {
        await temporal.connection.close();
      }
    }
  }, 30_000);

  it('answers the liveness probes (/healthz, /ping) and the readiness probe (/readyz) 200 without a key, with the version package.json names, as the document says', async () => {
    const doc = (await h.as(null).get('/openapi.json')).body;
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(doc as object, 'quota.json');
    const expected = {
      '/healthz': { status: 'ok', version },
      '/ping': { status: 'ok', version },
      '/readyz': { status: 'ready', database: 'up', cache: 'up', version },
    };
    for (const [probe, body] of Object.entries(expected)) {
      const reply = await h.as(null).get(probe);
      expect([probe, reply.status, reply.body]).toEqual([probe, 200, body]);
      const ref = doc.paths[probe].get.responses['200'].content['application/json'].schema.$ref;
      const validate = ajv.getSchema(`quota.json${ref}`)!;
      expect([probe, validate(reply.body) ? [] : validate.errors]).toEqual([probe, []]);
      // The version is part of the contract: an answer without it is not what the document says.
      expect([probe, validate({ status: 'ok' })]).toEqual([probe, false]);
    }
  });

  it('answers /healthz/jobs 503 once a job has had no success within its budget, and 200 after one', async () => {
    // Every job of this run's prefix just succeeded (other test files run some, at any time).
    await h.pool.query(sql.unsafe`
      DELETE FROM quota.job_runs WHERE task_queue_prefix = ${config.taskQueuePrefix}`);
    await h.pool.query(sql.unsafe`
      INSERT INTO quota.job_runs (task_queue_prefix, job, trigger, ok, started_at, finished_at)
      SELECT ${config.taskQueuePrefix}, job, 'schedule', true, now(), now()
      FROM unnest(${sql.array(JOB_NAMES, 'text')}::text[]) AS job`);
    const healthy = await h.as(null).get('/healthz/jobs');
    expect(healthy.status).toBe(200);
    await h.pool.query(sql.unsafe`
      UPDATE quota.job_runs SET started_at = now() - interval '4 hours', finished_at = now() - interval '4 hours'
      WHERE task_queue_prefix = ${config.taskQueuePrefix} AND job = 'counter-sweep'`);
    const stale = await h.as(null).get('/healthz/jobs');
    expect(stale.status).toBe(503);
    expect(stale.body.jobs.find((j: { name: string }) => j.name === 'counter-sweep')).toMatchObject(
      { healthy: false },
    );
    await h.operator.post('/v1/ops/jobs/counter-sweep');
    expect((await h.as(null).get('/healthz/jobs')).status).toBe(200);
  }, 30_000);

  it('keeps one Temporal schedule per job, made at start-up, which an operator sees by its name', async () => {
    const withSchedules = await startQuota({ QUOTA_JOB_SCHEDULES: 'true' });
    const temporal = createTemporalClient(config);
    try {
      for (const job of JOB_NAMES) {
        const schedule = temporal.schedule.getHandle(jobScheduleId(config.taskQueuePrefix, job));
        const described = await schedule.describe();
        expect(described.action).toMatchObject({
          type: 'startWorkflow',
          workflowType: 'quotaJobWorkflow',
        });
        await schedule.delete();
      }
    } finally {
      await temporal.connection.close();
      await withSchedules.close();
    }
  }, 30_000);
});
