import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { Client } from '@temporalio/client';
import { loadConfig, type Config } from '../../../platform/config';
import { createDatabasePool, type DatabasePool } from '../../../db/pool';
import { createTemporalClient } from '../../../platform/temporal';
import { eventually } from '../../support/services';
import { replayFailures } from '../../support/replay';
import { firstCalls, runBash } from '../../support/readme-first-calls';
import { REPO_ROOT } from '../../support/stack-env';
import { ALL_WORKFLOW_PERMISSIONS, dagClient, edge, shNode } from '../runs/dag-support';
import { client, newTenant, reconcilePass } from '../runs/support';

/**
 * The platform past one machine, on real engines: `scripts/cluster up` starts two hosts, each a
 * network namespace with its own address, Docker engine, worker and APIs, sharing PostgreSQL, a
 * Redis Cluster (three masters, a replica each), a Temporal server on PostgreSQL behind TLS with
 * its Web UI, a registry and SeaweedFS. What one host can do here, the other sees.
 */
jest.setTimeout(600_000);
const HOSTS = ['h1', 'h2'] as const;
type Host = (typeof HOSTS)[number];
const run = promisify(execFile);

/** scripts/cluster, with only what a shell of the machine has (not the stack's test settings). */
const cluster = (...args: string[]) =>
  run(path.join(REPO_ROOT, 'scripts/cluster'), args, {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    maxBuffer: 16 * 1024 * 1024,
  });

/** A host's settings as `scripts/cluster env` prints them (what its worker and APIs run with). */
function hostEnv(host: Host): NodeJS.ProcessEnv {
  const out = execFileSync(
    'bash',
    ['-c', 'set -a; eval "$(scripts/cluster env "$1")"; env -0', 'bash', host],
    { cwd: REPO_ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
  );
  return Object.fromEntries(
    out
      .toString()
      .split('\0')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

describe('the platform on a cluster of hosts (scripts/cluster)', () => {
  const env = {} as Record<Host, NodeJS.ProcessEnv>;
  const url = {} as Record<Host, { runs: string; ledger: string; quota: string }>;
  let config: Config;
  let pool: DatabasePool;
  let temporal: Client;
  let image: string;
  const workflowIds: string[] = [];

  beforeAll(async () => {
    await cluster('up');
    for (const host of HOSTS) {
      env[host] = hostEnv(host);
      const address = env[host].BIND_HOST!;
      url[host] = {
        quota: `http://${address}:8081`,
        runs: `http://${address}:8082`,
        ledger: `http://${address}:8083`,
      };
    }
    config = loadConfig(env.h1);
    pool = await createDatabasePool(config, {
      applicationName: 'cluster-test',
      maximumPoolSize: 2,
    });
    temporal = createTemporalClient(config);
    image = `${config.registryAddress}/busybox:latest`;
  }, 900_000);
  afterAll(async () => {
    await pool?.end();
    await temporal?.connection.close();
    await cluster('down');
  }, 300_000);

  it('has every part up; each host has its own address, Docker engine and worker', async () => {
    const { stdout } = await cluster('status');
    expect(stdout).not.toMatch(/\bdown\b/);
    // Two engines: each its own data root and its own bridge network.
    const engines = HOSTS.map((host) =>
      execFileSync('docker', ['info', '--format', '{{.DockerRootDir}}'], {
        env: { ...process.env, DOCKER_HOST: `unix://${env[host].DOCKER_SOCKET}` },
      })
        .toString()
        .trim(),
    );
    const bridges = HOSTS.map((host) =>
      execFileSync(
        'docker',
        ['network', 'inspect', 'bridge', '--format', '{{(index .IPAM.Config 0).Subnet}}'],
        { env: { ...process.env, DOCKER_HOST: `unix://${env[host].DOCKER_SOCKET}` } },
      )
        .toString()
        .trim(),
    );
    expect(new Set(engines).size).toBe(2);
    expect(new Set(bridges).size).toBe(2);
    for (const host of HOSTS) {
      expect(env[host].BIND_HOST).not.toMatch(/^127\./);
      expect(env[host].WORKER_ID).toBe(host);
      expect((await fetch(`${url[host].runs}/health`)).status).toBe(200);
    }
  });

  it("takes runs through either host's API on both hosts; each log is read through the other host, from the object store", async () => {
    const { key, tenantId } = await newTenant(pool);
    const api = { h1: client(url.h1.runs, key), h2: client(url.h2.runs, key) };
    const ranOn = new Map<string, Host>();
    for (let batch = 0; batch < 4 && new Set(ranOn.values()).size < 2; batch++) {
      const tracks = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const via = HOSTS[i % 2]!;
          const reply = await api[via].submit({ image, command: ['echo', `line of ${via}`] });
          expect(reply.status).toBe(202);
          return { track: reply.body.track_id, via };
        }),
      );
      for (const { track, via } of tracks) {
        const other = via === 'h1' ? 'h2' : 'h1';
        const ended = await api[other].waitFor(track, ['exited'], 120_000);
        ranOn.set(track, ended.worker_id as Host);
        const logs = await api[other].call<{ lines: string[] }>(
          'GET',
          `/api/v1/runs/${track}/logs?since=0`,
        );
        expect(logs.body.lines).toEqual([`line of ${via}`]);
      }
    }
    expect(new Set(ranOn.values())).toEqual(new Set(HOSTS));
    const s3 = new S3Client({
      endpoint: config.runs.logObjects!.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: {
        accessKeyId: config.runs.logObjects!.accessKeyId,
        secretAccessKey: config.runs.logObjects!.secretAccessKey,
      },
    });
    for (const track of ranOn.keys()) {
      const listed = await s3.send(
        new ListObjectsV2Command({
          Bucket: config.runs.logObjects!.bucket,
          Prefix: `${tenantId}/${track}/stdout/`,
        }),
      );
      expect(listed.KeyCount).toBeGreaterThan(0);
    }
    s3.destroy();
    workflowIds.push(...[...ranOn.keys()].slice(0, 4).map((track) => `run/${track}`));
  });

  it("reads a running run's log through the other host's API, while it runs and after", async () => {
    const { key } = await newTenant(pool);
    const api = { h1: client(url.h1.runs, key), h2: client(url.h2.runs, key) };
    const track = (
      await api.h1.submit({ image, command: ['sh', '-c', 'echo first; sleep 4; echo second'] })
    ).body.track_id;
    const running = await api.h1.waitFor(track, ['running'], 120_000);
    const other = running.worker_id === 'h1' ? api.h2 : api.h1;
    const lines = async () =>
      (await other.call<{ lines: string[] }>('GET', `/api/v1/runs/${track}/logs?since=0`)).body
        .lines;
    await eventually(async () => ((await lines()).includes('first') ? true : undefined));
    expect((await other.status(track)).body.state).toBe('running');
    await other.waitFor(track, ['exited'], 60_000);
    expect(await lines()).toEqual(['first', 'second']);
  });

  it('runs a DAG across the hosts: a node on one host reads the output of a node on the other (inputs_from)', async () => {
    const { key } = await newTenant(pool, { permissions: ALL_WORKFLOW_PERMISSIONS });
    const dag = dagClient(url.h2.runs, key);
    const api = client(url.h1.runs, key);
    await dag.api.call('PUT', '/api/v1/tenant/quotas', { max_concurrent_runs: 20 });
    const fan = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const across = async () => {
      const id = await dag.submit({
        name: 'across hosts',
        nodes: [
          shNode('root', 'echo \'{"from": "root"}\'', { image }),
          ...fan.map((ref) =>
            shNode(ref, 'echo "{\\"got\\": $SVC_INPUT_ROOT}"', { image, inputs_from: ['root'] }),
          ),
        ],
        edges: fan.map((ref) => edge('root', ref)),
      });
      const done = await dag.waitForState(id, ['succeeded', 'failed', 'cancelled'], 180_000);
      expect(done.state).toBe('succeeded');
      workflowIds.push(`dag/${id}`);
      const hostOf = async (ref: string) => {
        const track = done.nodes.find((n) => n.ref === ref)!.current_track_id!;
        return (await api.status(track)).body.worker_id as Host;
      };
      const rootHost = await hostOf('root');
      for (const ref of fan)
        if ((await hostOf(ref)) !== rootHost) return (await dag.node(id, ref)).output;
      return undefined;
    };
    // Eight nodes start at once after the root: both hosts' pollers take them, as a rule at the
    // first try; a DAG that stayed on one host proves nothing, so another is tried.
    let output: unknown;
    for (let i = 0; i < 3 && output === undefined; i++) output = await across();
    expect(output).toEqual({ got: { from: 'root' } });
  });

  it.each(['ledger', 'quota'] as const)(
    "runs services/%s/README.md's first calls against the second host, on the Redis Cluster",
    async (service) => {
      const { script, prints } = firstCalls(service);
      const ran = await runBash(script, {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...env.h2,
        [`${service.toUpperCase()}_URL`]: url.h2[service],
      });
      expect({ code: ran.code, stdout: ran.stdout, stderr: ran.stderr }).toEqual({
        code: 0,
        stdout: prints,
        stderr: '',
      });
    },
  );

  it('ends a run failed host_lost when its host dies for good; the other host takes the next run; the host, back, removes the container', async () => {
    const { key, tenantId } = await newTenant(pool);
    const api = client(url.h1.runs, key);
    const track = (await api.submit({ image, command: ['sleep', '600'], timeout_seconds: 900 }))
      .body.track_id;
    const host = (await api.waitFor(track, ['running'], 120_000)).worker_id as Host;
    const survivor = host === 'h1' ? 'h2' : 'h1';
    // The machine dies: every process in its namespace (worker, APIs, dockerd, containerd, the
    // container's own), at once.
    execFileSync('bash', ['-c', `ip netns pids plc-${host} | xargs -r kill -KILL`]);
    const other = client(url[survivor].runs, key);
    const told = await eventually(
      async () => {
        const pass = (await reconcilePass(temporal, '', { tenantId, hostLostGraceSeconds: 6 }))
          .result;
        return pass.hostLost!.length > 0 ? pass.hostLost : undefined;
      },
      60_000,
      2_000,
    );
    expect(told).toEqual([
      { trackId: track, workerId: host, silentSeconds: expect.any(Number) as number },
    ]);
    const lost = await other.waitFor(track, ['failed'], 60_000);
    expect(lost).toMatchObject({ reason: 'host_lost' });
    // Started once: never launched again elsewhere.
    expect(lost.events.filter((e) => e.to_state === 'running')).toHaveLength(1);
    const next = (await other.submit({ image, command: ['true'] })).body.track_id;
    expect((await other.waitFor(next, ['exited'], 120_000)).worker_id).toBe(survivor);

    await cluster('up');
    const containers = () =>
      execFileSync('docker', ['ps', '-aq', '--filter', `name=platform-run-${track}`], {
        env: { ...process.env, DOCKER_HOST: `unix://${env[host].DOCKER_SOCKET}` },
      })
        .toString()
        .trim();
    await eventually(() => Promise.resolve(containers() === '' ? true : undefined));
  });

  it("serves the Web UI and the operator CLI from the Temporal server, whose histories replay against today's code", async () => {
    const listed = (await (
      await fetch(
        `${env.h1.TEMPORAL_UI_URL}/api/v1/namespaces/default/workflows?query=${encodeURIComponent(
          `WorkflowId="${workflowIds[0]}"`,
        )}`,
      )
    ).json()) as { executions?: { execution: { workflowId: string } }[] };
    expect(listed.executions?.map((e) => e.execution.workflowId)).toEqual([workflowIds[0]]);

    const cli = env.h1.CLUSTER_TEMPORAL_CLI!.split(' ');
    const out = execFileSync(
      cli[0]!,
      [...cli.slice(1), 'workflow', 'describe', '--workflow-id', workflowIds[0]!, '-o', 'json'],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME } },
    ).toString();
    expect(JSON.parse(out)).toMatchObject({
      workflowExecutionInfo: { status: 'WORKFLOW_EXECUTION_STATUS_COMPLETED' },
    });

    const histories = await Promise.all(
      workflowIds.map(async (workflowId) => ({
        workflowId,
        history: await temporal.workflow.getHandle(workflowId).fetchHistory(),
      })),
    );
    expect(await replayFailures(histories, config.temporalPayloadKeys)).toEqual([]);
    expect(histories.length).toBeGreaterThanOrEqual(5);
  });
});

describe('scripts/cluster settings', () => {
  it('refuses CLUSTER_HOSTS outside 2 to 8 before it starts anything (the default, 2, is the cluster above)', async () => {
    for (const hosts of ['1', '9', '02', 'two']) {
      const refused = await run(path.join(REPO_ROOT, 'scripts/cluster'), ['up'], {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, CLUSTER_HOSTS: hosts },
      }).then(
        () => null,
        (error: { code: number; stderr: string; stdout: string }) => error,
      );
      expect(refused?.code).toBe(1);
      const said = `${refused?.stdout}${refused?.stderr}`;
      expect(said).toContain(`cluster FAILED: CLUSTER_HOSTS is ${hosts}\n`);
      expect(said).toContain('fix: set it to 2 to 8');
    }
  });
});
