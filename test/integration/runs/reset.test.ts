import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createDocker } from '../../../platform/docker';
import { OWNER_LABEL } from '../../../activities/docker/containers';
import { runWorkflowId } from '../../../contracts/runs/run';
import { eventually } from '../../support/services';
import {
  IMAGE,
  client,
  config,
  containersCreated,
  newTenant,
  startHarness,
  type Harness,
} from './support';
import { createTemporalClient } from '../../../platform/temporal';

const TERMINAL = ['exited', 'failed', 'timeout', 'killed'];
/**
 * With RECORD_RUN_HISTORIES=1 the executions made by the resets are saved here, so the replay
 * project keeps replaying the shape a reset run takes (it follows the row: patch run-follows-row).
 * Their suffix is the run workflow's current shape (SHAPES in histories.test.ts; the shapes are
 * listed at the top of workflows/runs/run.ts).
 */
const HISTORIES = path.resolve(__dirname, '../../histories/runs');
const CURRENT_SHAPE = '.one-activity';

/**
 * The operator's recipes of README "Resetting a run" (temporal workflow reset), run for real with
 * the CLI the stack builds: whatever point a run's workflow is reset to, the new execution ends
 * with the outcome the read model holds, and no second container is ever made.
 */
describe('a run workflow reset by an operator with the temporal CLI', () => {
  let h: Harness;
  let temporal: Client;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
    api = client(h.service.url, (await newTenant(h.pool)).key);
  });
  afterAll(async () => {
    await h?.close();
    await temporal?.connection.close();
  });

  const reset = async (trackId: string, type: 'FirstWorkflowTask' | 'LastWorkflowTask') => {
    const before = await temporal.workflow.getHandle(runWorkflowId(trackId)).describe();
    await promisify(execFile)(process.env.TEMPORAL_CLI!, [
      ...['workflow', 'reset', '--workflow-id', runWorkflowId(trackId), '--type', type],
      ...['--reason', 'test: operator reset', '--address', config.temporalAddress],
      ...['--namespace', config.temporalNamespace],
    ]);
    const after = temporal.workflow.getHandle(runWorkflowId(trackId));
    expect((await after.describe()).runId).not.toBe(before.runId);
    const result = (await after.result()) as { state: string; exitCode: number | null };
    if (process.env.RECORD_RUN_HISTORIES === '1')
      fs.writeFileSync(
        path.join(HISTORIES, `run-reset-${type}-${result.state}${CURRENT_SHAPE}.json`),
        historyToJSON(await after.fetchHistory()),
      );
    return result;
  };
  const submitAndFinish = async (command: string[]) => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const { track_id } = (await api.submit({ image: IMAGE, command })).body;
    const run = await api.waitFor(track_id, TERMINAL, 120_000);
    return { trackId: track_id, run, since };
  };

  it('when a run that exited 0 is reset to its first workflow task, then the new execution ends exited 0 as the API says, and no container is made', async () => {
    const { trackId, run, since } = await submitAndFinish(['true']);
    expect(run).toMatchObject({ state: 'exited', exit_code: 0 });
    expect(await reset(trackId, 'FirstWorkflowTask')).toEqual({ state: 'exited', exitCode: 0 });
    const after = (await api.status(trackId)).body;
    expect(after).toMatchObject({ state: 'exited', exit_code: 0 });
    expect(after.events).toEqual(run.events);
    expect(await containersCreated(trackId, since)).toBe(1);
  }, 180_000);

  it('when a run that failed with exit 3 is reset to its last workflow task, then the new execution ends failed with 3 and the run is unchanged', async () => {
    const { trackId, run, since } = await submitAndFinish(['sh', '-c', 'exit 3']);
    expect(run).toMatchObject({ state: 'failed', exit_code: 3 });
    expect(await reset(trackId, 'LastWorkflowTask')).toEqual({ state: 'failed', exitCode: 3 });
    expect((await api.status(trackId)).body.events).toEqual(run.events);
    expect(await containersCreated(trackId, since)).toBe(1);
  }, 180_000);

  it('when a running run is reset to its first workflow task, then the new execution follows the same container to its exit code, with one running event', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const { track_id } = (
      await api.submit({ image: IMAGE, command: ['sh', '-c', 'sleep 4; exit 7'] })
    ).body;
    const running = await api.waitFor(track_id, ['running'], 120_000);
    expect(await reset(track_id, 'FirstWorkflowTask')).toEqual({ state: 'failed', exitCode: 7 });
    const ended = (await api.status(track_id)).body;
    expect(ended).toMatchObject({
      state: 'failed',
      exit_code: 7,
      container_id: running.container_id,
    });
    expect(ended.events.filter((e) => e.to_state === 'running')).toHaveLength(1);
    expect(await containersCreated(track_id, since)).toBe(1);
    await eventually(async () => {
      const left = await createDocker(config).listContainers({
        all: true,
        filters: { label: [`${OWNER_LABEL}=run/${track_id}`] },
      });
      return left.length === 0 ? true : undefined;
    });
  }, 180_000);
});
