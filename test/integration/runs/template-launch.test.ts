import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createTemporalClient } from '../../../platform/temporal';
import { sql } from '../../../db/pool';
import { eventually } from '../../support/services';
import { IMAGE, config, newTenant, startHarness, type Harness } from './support';
import { ALL_WORKFLOW_PERMISSIONS, dagClient, type DagClient } from './dag-support';

/**
 * What the engine does with a template run (api/runs/templates prepares it): a secret parameter
 * reaches the container's env at node launch and nothing else ever shows it; scheduled_start
 * defers the whole graph. With RECORD_RUN_HISTORIES=1 the deferred DAG's history is saved.
 */
const PERMISSIONS = `${ALL_WORKFLOW_PERMISSIONS},svc_template_write,svc_template_read,svc_template_run`;
const SECRET = 's3cr3t-Value/with spaces';
jest.setTimeout(120_000);

describe('template runs on the engine', () => {
  let h: Harness;
  let dag: DagClient;
  let temporal: Client;
  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
    dag = dagClient(h.service.url, (await newTenant(h.pool, { permissions: PERMISSIONS })).key);
  });
  afterAll(async () => {
    await temporal.connection.close();
    await h.close();
  });

  const register = async (body: Record<string, unknown>) => {
    const reply = await dag.api.call<{ template_id: string }>('POST', '/api/v1/templates', body);
    expect(reply.status).toBe(201);
    return reply.body.template_id;
  };
  const run = async (templateId: string, body: Record<string, unknown>) => {
    const reply = await dag.api.call<{ workflow_id: string }>(
      'POST',
      `/api/v1/templates/${templateId}/run`,
      body,
    );
    expect(reply.status).toBe(202);
    return reply.body.workflow_id;
  };

  it('gives a secret parameter to the container only: no read, row or event shows it', async () => {
    const templateId = await register({
      params: [{ name: 'token', type: 'string', secret: true, required: true }],
      definition: {
        nodes: [
          {
            ref: 'use',
            image: IMAGE,
            // Proves the value arrived without printing it: its SHA-256 is the output.
            command: [
              'sh',
              '-c',
              'printf "[\\"%s\\"]\\n" "$(printf %s "$TOKEN" | sha256sum | cut -d" " -f1)"',
            ],
            env: { TOKEN: '${{ token }}' },
          },
        ],
      },
    });
    const workflowId = await run(templateId, { params: { token: SECRET } });
    expect((await dag.waitForState(workflowId)).state).toBe('succeeded');
    const node = await dag.node(workflowId, 'use');
    expect(node.output).toEqual([createHash('sha256').update(SECRET).digest('hex')]);
    const runStatus = await dag.api.status(node.current_track_id!);
    expect(runStatus.body.env).toEqual({ TOKEN: '${{ token }}' });
    const everything = JSON.stringify([
      await dag.status(workflowId),
      node,
      runStatus.body,
      await dag.events(workflowId),
      await h.pool.any(sql.unsafe`
        SELECT spec FROM runs.workflow_nodes WHERE workflow_id = ${workflowId}`),
      await h.pool.any(sql.unsafe`
        SELECT env, payload FROM runs.runs JOIN runs.run_events USING (track_id)
        WHERE workflow_id = ${workflowId}`),
      await h.pool.any(sql.unsafe`
        SELECT ciphertext FROM runs.workflow_secrets WHERE workflow_id = ${workflowId}`),
    ]);
    expect(everything).not.toContain(SECRET);
  });

  it('pauses a workflow still pending before its scheduled_start: it stays paused past it, and resumes to run', async () => {
    const templateId = await register({
      definition: { nodes: [{ ref: 'held', image: IMAGE, command: ['true'] }] },
    });
    const startAt = new Date(Date.now() + 2000);
    const workflowId = await run(templateId, { scheduled_start: startAt.toISOString() });
    await eventually(async () =>
      (await dag.status(workflowId)).state === 'pending' ? true : undefined,
    );
    expect((await dag.control(workflowId, 'pause')).status).toBe(200);
    expect(await dag.status(workflowId)).toMatchObject({ state: 'paused' });
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, startAt.getTime() - Date.now()) + 2000),
    );
    expect(await dag.status(workflowId)).toMatchObject({ state: 'paused', started_at: null });
    expect(await dag.states(workflowId)).toEqual({ held: 'pending' });
    expect((await dag.control(workflowId, 'resume')).status).toBe(200);
    expect((await dag.waitForState(workflowId)).state).toBe('succeeded');
  });

  it('defers the whole graph to scheduled_start', async () => {
    const templateId = await register({
      definition: { nodes: [{ ref: 'later', image: IMAGE, command: ['true'] }] },
    });
    const startAt = new Date(Date.now() + 4000);
    const workflowId = await run(templateId, { scheduled_start: startAt.toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await dag.status(workflowId)).toMatchObject({ state: 'pending', started_at: null });
    expect(await dag.states(workflowId)).toEqual({ later: 'pending' });
    const done = await dag.waitForState(workflowId);
    expect(done.state).toBe('succeeded');
    expect(Date.parse(done.started_at!)).toBeGreaterThanOrEqual(startAt.getTime());
    if (process.env.RECORD_RUN_HISTORIES === '1') {
      const handle = temporal.workflow.getHandle(`dag/${workflowId}`);
      await eventually(async () =>
        (await handle.describe()).status.name === 'COMPLETED' ? true : undefined,
      );
      fs.writeFileSync(
        path.resolve(__dirname, '../../histories/runs/dag-scheduled.json'),
        historyToJSON(await handle.fetchHistory()),
      );
    }
  });
});
