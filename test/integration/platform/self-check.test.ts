import type { Client } from '@temporalio/client';
import { loadConfig } from '../../../platform/config';
import { createDocker } from '../../../platform/docker';
import { OWNER_LABEL } from '../../../activities/docker/containers';
import { startTestService, eventually, type TestService } from '../../support/services';
import { createTemporalClient } from '../../../platform/temporal';

/**
 * One path through every layer: HTTP → Temporal workflow → activities that write Postgres and
 * run a container pulled from the local registry → read back through HTTP.
 */
describe('self-check path through every layer', () => {
  let runs: TestService;
  let temporal: Client;
  const config = loadConfig();
  const image = `${config.registryAddress}/busybox:latest`;

  beforeAll(async () => {
    runs = await startTestService('runs');
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    await runs?.close();
    await temporal?.connection.close();
  });

  const post = (body: unknown) =>
    fetch(`${runs.url}/api/v1/self-checks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  const waitForFinish = (checkId: string) =>
    eventually(async () => {
      const response = await fetch(`${runs.url}/api/v1/self-checks/${checkId}`);
      const check = (await response.json()) as Record<string, unknown>;
      return check.state === 'succeeded' || check.state === 'failed' ? check : undefined;
    }, 60_000);

  it('when a self-check is posted, then its container runs on a worker host and its exit code and stdout come back', async () => {
    const response = await post({
      image,
      command: ['sh', '-c', 'echo hello from $(hostname); echo oops >&2; exit 3'],
    });
    expect(response.status).toBe(202);
    const accepted = (await response.json()) as {
      check_id: string;
      state: string;
      workflow_id: string;
    };
    expect(accepted.state).toBe('scheduled');
    expect(accepted.workflow_id).toBe(`self-check/${accepted.check_id}`);

    const check = await waitForFinish(accepted.check_id);
    expect(check).toMatchObject({
      state: 'failed',
      exit_code: 3,
      timed_out: false,
      stderr: 'oops\n',
      worker_id: config.workerId,
    });
    expect(check.stdout).toMatch(/^hello from [0-9a-f]{12}\n$/);
    expect(Date.parse(check.finished_at as string)).toBeGreaterThanOrEqual(
      Date.parse(check.started_at as string),
    );

    const leftovers = await createDocker(config).listContainers({
      all: true,
      filters: { label: [`${OWNER_LABEL}=self-check/${accepted.check_id}`] },
    });
    expect(leftovers).toEqual([]);

    // The row is finished by the workflow's last activity, a moment before the workflow itself.
    const handle = temporal.workflow.getHandle(accepted.workflow_id);
    expect(await handle.result()).toMatchObject({ exitCode: 3, workerId: config.workerId });
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.searchAttributes).toMatchObject({
      TenantId: ['platform'],
      Service: ['runs'],
    });
  });

  it('when the container exits 0, then the check succeeds', async () => {
    const response = await post({ image, command: ['echo', 'ok'] });
    const { check_id } = (await response.json()) as { check_id: string };
    expect(await waitForFinish(check_id)).toMatchObject({
      state: 'succeeded',
      exit_code: 0,
      stdout: 'ok\n',
    });
  });

  it('when the image is not in the registry, then the check fails with the pull error and no retry loop', async () => {
    const response = await post({ image: `${config.registryAddress}/no-such-image:1` });
    const { check_id } = (await response.json()) as { check_id: string };
    const check = await waitForFinish(check_id);
    expect(check).toMatchObject({ state: 'failed', exit_code: null });
    expect(check.error).toMatch(/cannot pull/);
  });

  it('when the container outlives its timeout, then it is killed and the check says timed out', async () => {
    const response = await post({ image, command: ['sleep', '30'], timeout_seconds: 1 });
    const { check_id } = (await response.json()) as { check_id: string };
    expect(await waitForFinish(check_id)).toMatchObject({ state: 'failed', timed_out: true });
  });

  it('refuses an image outside the local registry, an invalid body, and an unknown id', async () => {
    const foreign = await post({ image: 'docker.io/library/busybox:latest' });
    expect(foreign.status).toBe(400);
    expect(await foreign.json()).toEqual({
      detail: 'image must come from ' + config.registryAddress,
    });

    const invalid = await post({ command: 'not-an-array' });
    expect(invalid.status).toBe(422);
    expect(((await invalid.json()) as { detail: string }).detail).toMatch(/image/);

    const missing = await fetch(`${runs.url}/api/v1/self-checks/01ARZ3NDEKTSV4RRFFQ69G5FAV`);
    expect(missing.status).toBe(404);
  });
});
