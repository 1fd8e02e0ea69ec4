import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../../platform/config';
import { REPO_ROOT } from '../../support/stack-env';
import { builtTool } from '../../support/built-tools';

/**
 * deploy/helm/platform as Helm itself reads it (HELM: scripts/test has `scripts/stack helm-path`
 * build it once from its Go module): `helm lint --strict`, then `helm template` rendered as a user
 * would install it, and every workload's environment checked against the configuration the
 * processes read (platform/config.ts): each variable one it knows, the whole accepted by it.
 */
jest.setTimeout(60_000);

const run = promisify(execFile);
const CHART = path.join(REPO_ROOT, 'deploy', 'helm', 'platform');

const helm = () => builtTool('HELM', 'helm-path');

interface Manifest {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: { template?: { spec: PodSpec } };
}

interface Container {
  name: string;
  command: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
}

interface PodSpec {
  containers: Container[];
}

/** A valid value for every secret the chart asks for. */
const SECRETS = {
  'secrets.DATABASE_URL': 'postgres://platform:secret@postgres:5432/platform',
  'secrets.TEMPORAL_PAYLOAD_KEYS': `k1:${Buffer.alloc(32, 7).toString('base64')}`,
  'secrets.RUNS_SECRETS_KEY': Buffer.alloc(32, 9).toString('base64'),
};

async function render(set: Record<string, string>): Promise<Manifest[]> {
  const args = ['template', 'platform', CHART];
  for (const [key, value] of Object.entries(set)) args.push('--set-string', `${key}=${value}`);
  const { stdout } = await run(helm(), args, { maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(stdout)
    .map((doc) => doc.toJSON() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

/** Each workload's containers with the environment they would start with (valueFrom: a sample). */
function environments(manifests: Manifest[]) {
  const named = (kind: string, name: string) =>
    manifests.find((m) => m.kind === kind && m.metadata.name === name);
  const out: { workload: string; container: Container; env: Record<string, string> }[] = [];
  for (const m of manifests) {
    const pod = m.spec?.template?.spec;
    if (!pod) continue;
    for (const container of pod.containers) {
      const env: Record<string, string> = {};
      for (const source of container.envFrom ?? []) {
        const map = source.configMapRef
          ? named('ConfigMap', source.configMapRef.name)?.data
          : named('Secret', source.secretRef!.name)?.stringData;
        if (!map) throw new Error(`${m.metadata.name}: envFrom names nothing the chart renders`);
        Object.assign(env, map);
      }
      for (const e of container.env ?? []) env[e.name] = e.value ?? 'from-the-pod';
      out.push({ workload: `${m.kind}/${m.metadata.name}`, container, env });
    }
  }
  return out;
}

describe('the Helm chart (deploy/helm/platform)', () => {
  it('passes helm lint --strict, with its defaults and with every option on', async () => {
    await run(helm(), ['lint', '--strict', CHART]);
    const every = [
      '--set',
      'temporalTls.existingSecret=temporal-tls',
      '--set',
      'temporalTls.serverName=temporal.example',
    ];
    await run(helm(), ['lint', '--strict', CHART, ...every]);
  });

  it('renders the three APIs, a Docker worker per node, workflow workers and the migrations, each starting a file the build emits', async () => {
    const workloads = environments(await render(SECRETS));
    expect(workloads.map((w) => w.workload).sort()).toEqual(
      [
        'DaemonSet/platform-docker-worker',
        'Deployment/platform-ledger-api',
        'Deployment/platform-quota-api',
        'Deployment/platform-runs-api',
        'Deployment/platform-workflow-worker',
        'Job/platform-migrate',
      ].sort(),
    );
    const emitted = (file: string) =>
      path.join(REPO_ROOT, file.replace(/^dist\//, '').replace(/\.js$/, '.ts'));
    for (const { workload, container } of workloads) {
      const [node, file] = container.command;
      expect([workload, node, fs.existsSync(emitted(file!))]).toEqual([workload, 'node', true]);
    }
  });

  it.each([
    ['the defaults', {}],
    [
      'Temporal over mTLS',
      {
        'temporalTls.existingSecret': 'temporal-tls',
        'temporalTls.serverName': 'temporal.example',
      },
    ],
  ])(
    "gives every workload an environment the processes' configuration accepts (%s)",
    async (_, extra) => {
      for (const { workload, env } of environments(await render({ ...SECRETS, ...extra }))) {
        const unknown = Object.keys(env).filter((name) => !CONFIG_VARIABLES.includes(name));
        expect([workload, unknown]).toEqual([workload, []]);
        // TLS files are read when a connection is made, not by loadConfig: the names suffice here.
        expect(() => loadConfig(env)).not.toThrow();
      }
    },
  );
});
