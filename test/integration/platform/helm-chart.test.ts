import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../../platform/config';
import { REPO_ROOT } from '../../support/stack-env';
import { builtTool } from '../../support/built-tools';
import { testNamespace } from '../../support/test-namespace';

/**
 * deploy/helm/platform as Helm and Kubernetes would read it. Helm (HELM) and kubeconform
 * (KUBECONFORM) are built once from their Go modules by `scripts/stack helm-path` and
 * `kubeconform-path`. `helm lint --strict`, then `helm template` rendered as a user would install
 * it (the values it requires, and the production-like example), every manifest checked against
 * Kubernetes' own schemas, and what the chart promises an operator: each workload's environment
 * is one the processes' configuration accepts (platform/config.ts), every pod but the docker
 * worker's passes the restricted Pod Security Standard, liveness is not readiness, an API outlives
 * its load balancer's deregistration, the Temporal setup hook registers scripts/search-attributes.txt
 * before anything starts, and a missing or mistyped value is refused by name.
 */
jest.setTimeout(60_000);

const run = promisify(execFile);
const CHART = path.join(REPO_ROOT, 'deploy', 'helm', 'platform');
const PRODUCTION = path.join(CHART, 'values-production.example.yaml');

const helm = () => builtTool('HELM', 'helm-path');

const kubeconform = () => builtTool('KUBECONFORM', 'kubeconform-path');

interface Probe {
  httpGet: { path: string; port: string };
}

interface Container {
  name: string;
  image: string;
  command: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number; hostPort?: number }[];
  securityContext?: SecurityContext;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type: string };
}

interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  securityContext?: SecurityContext;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  terminationGracePeriodSeconds?: number;
  volumes?: ({ name: string } & Record<string, unknown>)[];
}

type Labels = Record<string, string>;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Labels; annotations?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: {
    template?: { metadata: { labels: Labels }; spec: PodSpec };
    selector?: Labels | { matchLabels: Labels };
    maxUnavailable?: number | string;
    ports?: { name: string; port: number }[];
    endpoints?: { port: string; path: string }[];
  };
}

/** A valid value for every value the chart requires (config's addresses, the secrets). */
const REQUIRED = {
  'config.REDIS_URL': 'redis://redis:6379',
  'config.TEMPORAL_ADDRESS': 'temporal-frontend:7233',
  'config.REGISTRY_ADDRESS': 'registry.example.com:5000',
  'secrets.DATABASE_URL': 'postgres://platform:secret@postgres:5432/platform',
  'secrets.TEMPORAL_PAYLOAD_KEYS': `k1:${Buffer.alloc(32, 7).toString('base64')}`,
  'secrets.RUNS_SECRETS_KEY': Buffer.alloc(32, 9).toString('base64'),
};
const TLS = {
  'temporalTls.existingSecret': 'temporal-tls',
  'temporalTls.serverName': 'temporal.example',
};

interface Values {
  /** --set-string: each a string */
  set?: Record<string, string>;
  /** --set: numbers and booleans read as YAML reads them */
  typed?: Record<string, string>;
  /** values files, as -f */
  files?: string[];
}

function helmArgs(command: string[], { set = {}, typed = {}, files = [] }: Values): string[] {
  const args = [...command];
  for (const file of files) args.push('-f', file);
  for (const [key, value] of Object.entries(set)) args.push('--set-string', `${key}=${value}`);
  for (const [key, value] of Object.entries(typed)) args.push('--set', `${key}=${value}`);
  return args;
}

async function renderText(values: Values): Promise<string> {
  const args = helmArgs(['template', 'platform', CHART], values);
  const { stdout } = await run(helm(), args, { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

async function render(values: Values): Promise<Manifest[]> {
  return parseAllDocuments(await renderText(values))
    .map((doc) => doc.toJSON() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

/** Helm's refusal (its stderr) of these values, or null when it renders them. */
async function refusal(values: Values): Promise<string | null> {
  return renderText(values).then(
    () => null,
    (error: Error & { stderr?: string }) => error.stderr ?? error.message,
  );
}

/** The chart's defaults, with what it requires and nothing more. */
const DEFAULTS: Values = { set: REQUIRED };
const WITH_TLS: Values = { set: { ...REQUIRED, ...TLS } };
const PRODUCTION_VALUES: Values = { files: [PRODUCTION] };

const named = (manifests: Manifest[], kind: string, name: string) =>
  manifests.find((m) => m.kind === kind && m.metadata.name === name);

const pods = (manifests: Manifest[]) =>
  manifests.flatMap((m) =>
    m.spec?.template
      ? [{ workload: `${m.kind}/${m.metadata.name}`, pod: m.spec.template.spec }]
      : [],
  );

/** The pods of the platform's image (the Temporal setup hook runs Temporal's admin-tools). */
const PLATFORM_IMAGE = (() => {
  const { image } = parse(fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8')) as {
    image: { repository: string; tag: string };
  };
  return `${image.repository}:${image.tag}`;
})();

/** Each workload's containers with the environment they would start with (valueFrom: a sample). */
function environments(manifests: Manifest[]) {
  const out: { workload: string; container: Container; env: Record<string, string> }[] = [];
  for (const { workload, pod } of pods(manifests)) {
    for (const container of pod.containers) {
      const env: Record<string, string> = {};
      for (const source of container.envFrom ?? []) {
        const map = source.configMapRef
          ? named(manifests, 'ConfigMap', source.configMapRef.name)?.data
          : named(manifests, 'Secret', source.secretRef!.name)?.stringData;
        if (!map) throw new Error(`${workload}: envFrom names nothing the chart renders`);
        Object.assign(env, map);
      }
      for (const e of container.env ?? []) env[e.name] = e.value ?? 'from-the-pod';
      out.push({ workload, container, env });
    }
  }
  return out;
}

/**
 * What the restricted Pod Security Standard refuses in a pod, by the names of its controls
 * (kubernetes.io/docs/concepts/security/pod-security-standards: the restricted profile and the
 * baseline one it includes, as far as this chart's pods could break them).
 */
function restrictedViolations(pod: PodSpec): string[] {
  const found: string[] = [];
  const podContext = pod.securityContext ?? {};
  if (pod.hostNetwork || pod.hostPID || pod.hostIPC) found.push('host namespaces');
  const allowedVolumes = [
    'configMap',
    'csi',
    'downwardAPI',
    'emptyDir',
    'ephemeral',
    'persistentVolumeClaim',
    'projected',
    'secret',
  ];
  for (const volume of pod.volumes ?? [])
    if (!allowedVolumes.some((type) => type in volume)) found.push(`volume types: ${volume.name}`);
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    const context = c.securityContext ?? {};
    // A container's own setting wins over the pod's.
    const effective = <K extends keyof SecurityContext>(key: K) => context[key] ?? podContext[key];
    if (context.privileged) found.push(`privileged containers: ${c.name}`);
    if ((c.ports ?? []).some((p) => p.hostPort)) found.push(`host ports: ${c.name}`);
    if (context.allowPrivilegeEscalation !== false) found.push(`privilege escalation: ${c.name}`);
    if (effective('runAsNonRoot') !== true) found.push(`running as non-root: ${c.name}`);
    if (effective('runAsUser') === 0) found.push(`running as non-root user: ${c.name}`);
    if (!['RuntimeDefault', 'Localhost'].includes(effective('seccompProfile')?.type ?? ''))
      found.push(`seccomp: ${c.name}`);
    const { drop = [], add = [] } = context.capabilities ?? {};
    if (!drop.includes('ALL') || add.some((cap) => cap !== 'NET_BIND_SERVICE'))
      found.push(`capabilities: ${c.name}`);
  }
  return found;
}

type Schema = { [key: string]: unknown } & {
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: boolean | Schema;
};

/**
 * A schema of Kubernetes' OpenAPI as kubeconform wants it "strict": an object that lists its
 * properties has no others (kubectl's own validation rule), so a misspelt or misplaced field
 * fails. An int-or-string (ports, maxUnavailable) takes either, as the API does where the
 * document says only `format: int-or-string`.
 */
function strict(schema: Schema): Schema {
  if (schema.format === 'int-or-string')
    return { oneOf: [{ type: 'string' }, { type: 'integer' }] };
  const out: Schema = { ...schema };
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, property]) => [name, strict(property)]),
    );
    if (!('additionalProperties' in schema) && !schema['x-kubernetes-preserve-unknown-fields'])
      out.additionalProperties = false;
  }
  if (schema.items) out.items = strict(schema.items);
  if (typeof schema.additionalProperties === 'object')
    out.additionalProperties = strict(schema.additionalProperties);
  for (const combination of ['allOf', 'anyOf', 'oneOf'])
    if (Array.isArray(schema[combination]))
      out[combination] = (schema[combination] as Schema[]).map(strict);
  return out;
}

/** The names of the definitions `root` needs, itself included, through every `$ref` in them. */
function referenced(root: string, definitions: Record<string, Schema>): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const json = JSON.stringify(definitions[name]);
    for (const [, ref] of json.matchAll(/"\$ref":"#\/definitions\/([^"]+)"/g)) visit(ref!);
  };
  visit(root);
  return [...seen];
}

/**
 * kubeconform's schemas, made offline: its default downloads them from GitHub, which neither
 * this machine nor CI reaches. Made as the kubernetes-json-schema project makes them for it,
 * from what `scripts/stack kubeconform-path` copied out of Go modules beside the binary
 * (schema-sources/): Kubernetes' OpenAPI document (k8s.io/kubernetes, api/openapi-spec) and the
 * ServiceMonitor CRD of prometheus-operator, which is no core kind. One file per kind where
 * kubeconform looks it up ({{.ResourceKind}}{{.KindSuffix}}.json: deployment-apps-v1.json),
 * standalone: the kind's definition with the ones it refers to (one file of all 700 would be
 * read and compiled again for each kind). Returns the -schema-location template.
 */
function kubeconformSchemas(dir: string): string {
  const sources = path.join(path.dirname(kubeconform()), 'schema-sources');
  const openapi = JSON.parse(
    fs.readFileSync(path.join(sources, 'kubernetes-swagger.json'), 'utf8'),
  ) as { definitions: Record<string, Schema> };
  const definitions = Object.fromEntries(
    Object.entries(openapi.definitions).map(([name, schema]) => [name, strict(schema)]),
  );
  // A quantity is a string in the document, a number too in the API (`cpu: 1`).
  definitions['io.k8s.apimachinery.pkg.api.resource.Quantity'] = {
    oneOf: [{ type: 'string' }, { type: 'number' }],
  };
  const file = (kind: string, group: string, version: string) =>
    path.join(
      dir,
      `${kind}${group ? `-${group.split('.')[0]}` : ''}-${version}.json`.toLowerCase(),
    );
  for (const [name, schema] of Object.entries(openapi.definitions)) {
    const kinds = (schema['x-kubernetes-group-version-kind'] ?? []) as {
      group: string;
      kind: string;
      version: string;
    }[];
    if (kinds.length === 0) continue;
    const needed = referenced(name, definitions).map((n): [string, Schema] => [n, definitions[n]!]);
    const standalone = JSON.stringify({
      $ref: `#/definitions/${name}`,
      definitions: Object.fromEntries(needed),
    });
    for (const { group, kind, version } of kinds)
      fs.writeFileSync(file(kind, group, version), standalone);
  }
  const crd = parse(fs.readFileSync(path.join(sources, 'servicemonitors-crd.yaml'), 'utf8')) as {
    spec: { group: string; versions: { name: string; schema: { openAPIV3Schema: Schema } }[] };
  };
  for (const version of crd.spec.versions)
    fs.writeFileSync(
      file('ServiceMonitor', crd.spec.group, version.name),
      JSON.stringify(strict(version.schema.openAPIV3Schema)),
    );
  return path.join(dir, '{{.ResourceKind}}{{.KindSuffix}}.json');
}

interface KubeconformReport {
  resources: { kind: string; name: string; status: string; msg: string }[];
  summary: { valid: number; invalid: number; errors: number; skipped: number };
}

describe('the Helm chart (deploy/helm/platform)', () => {
  let workDir: string;
  let schemaLocation: string;
  beforeAll(() => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'helm-chart-test-'));
    fs.mkdirSync(path.join(workDir, 'schemas'));
    schemaLocation = kubeconformSchemas(path.join(workDir, 'schemas'));
  });
  afterAll(() => fs.rmSync(workDir, { recursive: true, force: true }));

  async function kubeconformReport(manifests: string, name: string): Promise<KubeconformReport> {
    const file = path.join(workDir, `${name}.yaml`);
    fs.writeFileSync(file, manifests);
    const args = ['-strict', '-summary', '-output', 'json', '-schema-location', schemaLocation];
    // exit 1 on an invalid manifest: the report says which
    const { stdout } = await run(kubeconform(), [...args, file]).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
    );
    return JSON.parse(stdout) as KubeconformReport;
  }

  it('passes helm lint --strict: with the values it requires, with every option on, with the production example', async () => {
    await run(helm(), helmArgs(['lint', '--strict', CHART], DEFAULTS));
    await run(helm(), helmArgs(['lint', '--strict', CHART], WITH_TLS));
    await run(helm(), helmArgs(['lint', '--strict', CHART], PRODUCTION_VALUES));
  });

  it('renders the three APIs, a Docker worker per node, workflow workers, the migrations and the Temporal setup, each starting a file the build emits', async () => {
    const manifests = await render(DEFAULTS);
    const workloads = environments(manifests);
    expect(workloads.map((w) => w.workload).sort()).toEqual(
      [
        'DaemonSet/platform-docker-worker',
        'Deployment/platform-ledger-api',
        'Deployment/platform-quota-api',
        'Deployment/platform-runs-api',
        'Deployment/platform-workflow-worker',
        'Job/platform-migrate',
        'Job/platform-temporal-setup',
      ].sort(),
    );
    const emitted = (file: string) =>
      path.join(REPO_ROOT, file.replace(/^dist\//, '').replace(/\.js$/, '.ts'));
    for (const { workload, container } of workloads) {
      if (container.image !== PLATFORM_IMAGE) continue;
      const [node, file] = container.command;
      expect([workload, node, fs.existsSync(emitted(file!))]).toEqual([workload, 'node', true]);
    }
  });

  it.each([
    ['the values it requires', DEFAULTS],
    ['Temporal over mTLS', WITH_TLS],
  ])(
    "gives every workload of the platform's image an environment its configuration accepts (%s)",
    async (_, values) => {
      for (const { workload, container, env } of environments(await render(values))) {
        if (container.image !== PLATFORM_IMAGE) continue;
        const unknown = Object.keys(env).filter((name) => !CONFIG_VARIABLES.includes(name));
        expect([workload, unknown]).toEqual([workload, []]);
        // TLS files are read when a connection is made, not by loadConfig: the names suffice here.
        expect(() => loadConfig(env)).not.toThrow();
      }
    },
  );

  it.each([
    ['the values it requires', DEFAULTS],
    ['Temporal over mTLS', WITH_TLS],
    ['the production example', PRODUCTION_VALUES],
  ])(
    "renders manifests Kubernetes' own schemas accept: kubeconform -strict, offline (%s)",
    async (name, values) => {
      const text = await renderText(values);
      const count = parseAllDocuments(text).filter((doc) => doc.toJSON() !== null).length;
      const report = await kubeconformReport(text, name.replace(/\W+/g, '-'));
      // -output json lists only what is not valid
      expect(report.resources).toEqual([]);
      expect(report.summary).toEqual({ valid: count, invalid: 0, errors: 0, skipped: 0 });
    },
  );

  it('refuses what Kubernetes would: a misplaced field, a wrong type, a missing required field, a field the ServiceMonitor CRD lacks', async () => {
    const manifests = await render({ set: REQUIRED, typed: { 'serviceMonitor.enabled': 'true' } });
    const deployment = manifests.find((m) => m.kind === 'Deployment')!;
    const monitor = manifests.find((m) => m.kind === 'ServiceMonitor')!;
    const spec = deployment.spec!;
    const pod = spec.template!.spec;
    const broken = [
      { ...deployment, spec: { ...spec, replica: 2 } },
      { ...deployment, spec: { ...spec, replicas: 'two' } },
      {
        ...deployment,
        spec: {
          ...spec,
          template: {
            ...spec.template,
            spec: { ...pod, containers: [{ ...pod.containers[0], name: undefined }] },
          },
        },
      },
      {
        ...monitor,
        spec: { ...monitor.spec, endpoints: [{ ...monitor.spec!.endpoints![0], prot: 'http' }] },
      },
    ];
    const text = broken.map((m) => JSON.stringify(m)).join('\n---\n');
    const report = await kubeconformReport(text, 'broken');
    expect(report.summary).toMatchObject({ valid: 0, invalid: broken.length });
    // sorted: kubeconform reports in the order its goroutines finish
    expect(report.resources.map((r) => r.msg).sort()).toEqual([
      expect.stringContaining("at '/spec': additional properties 'replica' not allowed"),
      expect.stringContaining("at '/spec/replicas': got string, want integer"),
      expect.stringContaining("at '/spec/template/spec/containers/0': missing property 'name'"),
      expect.stringContaining("at '/spec/endpoints/0': additional properties 'prot' not allowed"),
    ]);
  });

  it.each([
    ['the values it requires', DEFAULTS],
    ['the production example', PRODUCTION_VALUES],
  ])(
    "runs every pod but the docker worker's under the restricted Pod Security Standard, on a read-only root (%s)",
    async (_, values) => {
      const manifests = await render(values);
      for (const { workload, pod } of pods(manifests)) {
        const violations = restrictedViolations(pod);
        const readOnly = pod.containers.map((c) => c.securityContext?.readOnlyRootFilesystem);
        if (workload === 'DaemonSet/platform-docker-worker') {
          // Its exception, as values.yaml and the chart's README say: root, for the node's Docker
          // socket (a hostPath), and the node's run-log directory; nothing else.
          expect(violations).toEqual([
            'volume types: docker-socket',
            'volume types: run-logs',
            'running as non-root: worker',
            'running as non-root user: worker',
          ]);
        } else {
          expect([workload, violations]).toEqual([workload, []]);
          // A numeric user (the image's `node`), so that runAsNonRoot is checked without the image.
          expect([workload, pod.securityContext?.runAsUser]).toEqual([workload, 1000]);
        }
        expect([workload, readOnly]).toEqual([workload, pod.containers.map(() => true)]);
        // Writable: /tmp, an emptyDir, in every pod.
        const tmp = pod.volumes?.find((v) => v.name === 'tmp');
        expect([workload, tmp && 'emptyDir' in tmp]).toEqual([workload, true]);
      }
    },
  );

  it('probes each API and each worker with a liveness that is not its readiness, on a port it serves', async () => {
    for (const { workload, pod } of pods(await render(DEFAULTS))) {
      if (workload.startsWith('Job/')) continue;
      for (const c of pod.containers) {
        const [startup, liveness, readiness] = [c.startupProbe, c.livenessProbe, c.readinessProbe];
        expect([workload, liveness && readiness]).toEqual([workload, expect.anything()]);
        // Liveness restarts the pod: it must not fail with a backend (a database blip would
        // restart every pod), which is what readiness reports.
        expect([workload, liveness!.httpGet.path]).not.toEqual([workload, readiness!.httpGet.path]);
        expect([workload, startup?.httpGet]).toEqual([workload, liveness!.httpGet]);
        const ports = (c.ports ?? []).map((p) => p.name);
        expect([workload, ports]).toEqual([
          workload,
          expect.arrayContaining([liveness!.httpGet.port, readiness!.httpGet.port]),
        ]);
      }
    }
  });

  it.each([
    ['the values it requires', DEFAULTS],
    ['the production example', PRODUCTION_VALUES],
  ])(
    'lets each API outlive its deregistration: a preStop sleep, then a grace longer than it and the drain (%s)',
    async (_, values) => {
      const manifests = await render(values);
      const config = manifests.find((m) => m.kind === 'ConfigMap' && m.data?.BIND_HOST)!.data!;
      const drainSeconds = Number(config.SHUTDOWN_GRACE_MS ?? 10_000) / 1000;
      const apis = manifests.filter(
        (m) => m.kind === 'Deployment' && /-api$/.test(m.metadata.name),
      );
      expect(apis).toHaveLength(3);
      for (const api of apis) {
        const pod = api.spec!.template!.spec;
        const preStop = pod.containers[0]!.lifecycle?.preStop?.exec?.command ?? [];
        expect([api.metadata.name, preStop[0]]).toEqual([api.metadata.name, 'sleep']);
        const sleep = Number(preStop[1]);
        expect(sleep).toBeGreaterThan(0);
        expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(sleep + drainSeconds);
      }
    },
  );

  it("refuses a grace that would cut an API's drain short, naming the values", async () => {
    const message = await refusal({
      set: REQUIRED,
      typed: { 'apiShutdown.terminationGracePeriodSeconds': '20' },
    });
    expect(message).toContain('apiShutdown.terminationGracePeriodSeconds (20) must be at least');
  });

  it('gives each API a PodDisruptionBudget of its own pods', async () => {
    const manifests = await render(DEFAULTS);
    const budgets = manifests.filter((m) => m.kind === 'PodDisruptionBudget');
    const apis = manifests.filter((m) => m.kind === 'Deployment' && /-api$/.test(m.metadata.name));
    for (const api of apis) {
      const podLabels = api.spec!.template!.metadata.labels;
      const selecting = budgets.filter((b) =>
        Object.entries((b.spec!.selector as { matchLabels: Labels }).matchLabels).every(
          ([key, value]) => podLabels[key] === value,
        ),
      );
      expect([api.metadata.name, selecting.map((b) => b.spec!.maxUnavailable)]).toEqual([
        api.metadata.name,
        [1],
      ]);
    }
    expect(budgets).toHaveLength(apis.length);
  });

  describe('the Temporal setup hook', () => {
    const searchAttributes = fs.readFileSync(
      path.join(REPO_ROOT, 'scripts', 'search-attributes.txt'),
      'utf8',
    );
    it('carries scripts/search-attributes.txt as it is, and the setup script Compose mounts', () => {
      const copy = (file: string) => fs.readFileSync(path.join(CHART, 'files', file), 'utf8');
      expect(copy('search-attributes.txt')).toEqual(searchAttributes);
      const compose = fs.readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8');
      expect(compose).toContain('./deploy/helm/platform/files/temporal-setup.sh:');
    });

    it('renders a Job, before every workload and the migrations, that runs that script over that list for the configured namespace', async () => {
      const manifests = await render(DEFAULTS);
      const job = named(manifests, 'Job', 'platform-temporal-setup')!;
      const files = named(manifests, 'ConfigMap', 'platform-temporal-setup')!;
      const migrate = named(manifests, 'Job', 'platform-migrate')!;
      const hook = (m: Manifest) => m.metadata.annotations?.['helm.sh/hook'];
      const weight = (m: Manifest) => Number(m.metadata.annotations?.['helm.sh/hook-weight']);
      // pre-install: Helm creates the APIs and workers (no hooks) only once it has succeeded.
      expect(hook(job)).toBe('pre-install,pre-upgrade');
      expect(hook(files)).toBe('pre-install,pre-upgrade');
      expect(weight(files)).toBeLessThan(weight(job));
      expect(weight(job)).toBeLessThan(weight(migrate));
      for (const m of manifests.filter((m) => ['Deployment', 'DaemonSet'].includes(m.kind)))
        expect([m.metadata.name, hook(m)]).toEqual([m.metadata.name, undefined]);

      expect(files.data).toEqual({
        'search-attributes.txt': searchAttributes,
        'temporal-setup.sh': fs.readFileSync(
          path.join(CHART, 'files', 'temporal-setup.sh'),
          'utf8',
        ),
      });
      const pod = job.spec!.template!.spec;
      const container = pod.containers[0]!;
      expect(container.image).toMatch(/^temporalio\/admin-tools:/);
      expect(container.command).toEqual(['sh', '/etc/platform/temporal-setup.sh']);
      const mount = container.volumeMounts!.find((m) => m.mountPath === '/etc/platform')!;
      const volume = pod.volumes!.find((v) => v.name === mount.name)!;
      expect(volume.configMap).toEqual({ name: 'platform-temporal-setup' });
      const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
      const config = named(manifests, 'ConfigMap', 'platform-config')!.data!;
      expect(env).toMatchObject({
        TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS,
        TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE,
        SEARCH_ATTRIBUTES_FILE: '/etc/platform/search-attributes.txt',
      });
    });

    it("gives the temporal CLI the workloads' TLS files, under the mounted Secret", async () => {
      const manifests = await render(WITH_TLS);
      const pod = named(manifests, 'Job', 'platform-temporal-setup')!.spec!.template!.spec;
      const container = pod.containers[0]!;
      const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
      // The CLI's names for them (temporal --help), not the platform's TEMPORAL_TLS_*_FILE.
      expect(env).toMatchObject({
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/etc/platform/temporal-tls/ca.crt',
        TEMPORAL_TLS_CLIENT_CERT_PATH: '/etc/platform/temporal-tls/tls.crt',
        TEMPORAL_TLS_CLIENT_KEY_PATH: '/etc/platform/temporal-tls/tls.key',
        TEMPORAL_TLS_SERVER_NAME: 'temporal.example',
      });
      const mount = container.volumeMounts!.find((m) => m.name === 'temporal-tls');
      expect(mount?.mountPath).toBe('/etc/platform/temporal-tls');
      expect(pod.volumes!.find((v) => v.name === 'temporal-tls')?.secret).toEqual({
        secretName: 'temporal-tls',
      });
    });

    it("runs as Kubernetes would run it against the stack's Temporal: the suite's namespace has every attribute, so it succeeds and changes nothing", async () => {
      const namespace = testNamespace();
      const manifests = await render({
        set: {
          ...REQUIRED,
          'config.TEMPORAL_ADDRESS': process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
          'config.TEMPORAL_NAMESPACE': namespace,
        },
      });
      const container = named(manifests, 'Job', 'platform-temporal-setup')!.spec!.template!.spec
        .containers[0]!;
      // The ConfigMap's files where the pod would find them, the Job's literal settings.
      const mounted = path.join(workDir, 'etc-platform');
      fs.mkdirSync(mounted, { recursive: true });
      for (const [file, text] of Object.entries(
        named(manifests, 'ConfigMap', 'platform-temporal-setup')!.data!,
      ))
        fs.writeFileSync(path.join(mounted, file), text);
      const env: Record<string, string> = {
        PATH: `${path.dirname(process.env.TEMPORAL_CLI!)}:${process.env.PATH}`,
        HOME: workDir,
      };
      for (const e of container.env ?? [])
        if (e.value !== undefined) env[e.name] = e.value.replace(/^\/etc\/platform/, mounted);
      env.TEMPORAL_SETUP_WAIT_SECONDS = '20';
      const { stdout } = await run('sh', [path.join(mounted, 'temporal-setup.sh')], { env });
      expect(stdout.trim()).toBe(
        `temporal-setup: namespace ${namespace} ready with the search attributes of ${mounted}/search-attributes.txt`,
      );
    });
  });

  describe('values', () => {
    it.each(Object.keys(REQUIRED))('refuses to render without %s, naming it', async (key) => {
      const set: Record<string, string> = { ...REQUIRED };
      delete set[key];
      expect(await refusal({ set })).toContain(`${key} is required`);
    });

    it('requires no secret value when secrets.existingSecret names a Secret of yours', async () => {
      const set: Record<string, string> = { 'secrets.existingSecret': 'mine' };
      for (const [key, value] of Object.entries(REQUIRED))
        if (key.startsWith('config.')) set[key] = value;
      const manifests = await render({ set });
      expect(manifests.filter((m) => m.kind === 'Secret')).toEqual([]);
      const secretRefs = pods(manifests).flatMap(({ pod }) =>
        pod.containers.flatMap((c) => (c.envFrom ?? []).flatMap((e) => e.secretRef?.name ?? [])),
      );
      expect(new Set(secretRefs)).toEqual(new Set(['mine']));
    });

    it.each([
      ['a wrong type', { 'apis.ledger.replicas': 'two' }, "at '/apis/ledger/replicas'"],
      ['a misspelt value', { 'apis.ledgr.replicas': '2' }, "additional properties 'ledgr'"],
      ['a malformed key', { 'secrets.RUNS_SECRETS_KEY': 'short' }, '/secrets/RUNS_SECRETS_KEY'],
    ])('refuses %s by values.schema.json', async (_, wrong, message) => {
      // --set: `2` is a number, as in a values file
      const set = Object.fromEntries(Object.entries(REQUIRED).filter(([key]) => !(key in wrong)));
      const stderr = await refusal({ set, typed: wrong });
      expect(stderr).toContain("values don't meet the specifications of the schema");
      expect(stderr).toContain(message);
    });

    it('makes the production example production-like: several replicas, resources, ServiceMonitors', async () => {
      const manifests = await render(PRODUCTION_VALUES);
      for (const m of manifests.filter((m) => m.kind === 'Deployment')) {
        expect([m.metadata.name, (m.spec as { replicas: number }).replicas > 1]).toEqual([
          m.metadata.name,
          true,
        ]);
      }
      for (const { workload, pod } of pods(manifests)) {
        if (workload === 'Job/platform-temporal-setup') continue;
        const resources = (pod.containers[0] as { resources?: { requests?: object } }).resources;
        expect([workload, resources?.requests]).toEqual([workload, expect.anything()]);
      }
      expect(manifests.filter((m) => m.kind === 'ServiceMonitor').length).toBeGreaterThan(0);
    });
  });

  it('scrapes every /metrics there is with a ServiceMonitor when asked (off by default), each selecting a Service with the port it names', async () => {
    expect((await render(DEFAULTS)).filter((m) => m.kind === 'ServiceMonitor')).toEqual([]);
    const manifests = await render({ set: REQUIRED, typed: { 'serviceMonitor.enabled': 'true' } });
    const monitors = manifests.filter((m) => m.kind === 'ServiceMonitor');
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(
      [
        'platform-docker-worker',
        'platform-ledger-api',
        'platform-quota-api',
        'platform-runs-api',
        'platform-workflow-worker',
      ].sort(),
    );
    const services = manifests.filter((m) => m.kind === 'Service');
    for (const monitor of monitors) {
      const selector = (monitor.spec!.selector as { matchLabels: Labels }).matchLabels;
      const selected = services.filter((s) =>
        Object.entries(selector).every(([key, value]) => s.metadata.labels?.[key] === value),
      );
      expect([monitor.metadata.name, selected.length]).toEqual([monitor.metadata.name, 1]);
      const ports = selected[0]!.spec!.ports!.map((p) => p.name);
      for (const endpoint of monitor.spec!.endpoints!) {
        expect(endpoint.path).toBe('/metrics');
        expect(ports).toContain(endpoint.port);
      }
    }
  });
});
