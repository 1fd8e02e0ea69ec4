import fs from 'node:fs';
import os from 'node:os';
import Joi from 'joi';
import proxyAddr from 'proxy-addr';
import { parseSecretsKey } from './secrets';
import { parsePayloadKeys, type PayloadKey } from './payload-codec';
import { labelledMessage } from './joi-messages';
import { PORT_SETTINGS } from './ports';
import { TRACING_VARIABLES } from './tracing';

/** The entries of a TRUSTED_PROXIES value (comma-separated; blanks ignored). */
const trustedProxyList = (value: string): string[] =>
  value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);

/** Why `entries` is no trust list (an entry that is no address, range or keyword), or null. */
function trustedProxiesProblem(entries: string[]): string | null {
  try {
    proxyAddr.compile(entries);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The whole configuration of every process, read once from the environment at start-up.
 * Each key names its env var, default and meaning; bad values fail fast with a clear message.
 */
const schema = Joi.object({
  DATABASE_URL: Joi.string()
    .uri({ scheme: ['postgres', 'postgresql'] })
    .default('postgres://platform:platform@127.0.0.1:5432/platform')
    .description('PostgreSQL connection URI; one database, one schema per service'),
  DATABASE_POOL_SIZE: Joi.number()
    .integer()
    .min(1)
    .max(500)
    .default(20)
    .description('connections per pool'),
  DATABASE_STATEMENT_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .default(5000)
    .description('statement budget; past it the database aborts the query'),
  REDIS_URL: Joi.string()
    .uri({ scheme: ['redis', 'rediss'] })
    .default('redis://127.0.0.1:6379')
    .description('Redis connection URI; keys are prefixed by service'),
  REDIS_CLUSTER_NODES: Joi.string()
    .allow('')
    .default('')
    .pattern(/^[^\s,]+:\d{1,5}(,[^\s,]+:\d{1,5})*$/)
    .description(
      'host:port of some nodes of a Redis Cluster (comma-separated): the client learns the rest from them. REDIS_URL then gives only the credentials and TLS (rediss:). Empty: the one Redis at REDIS_URL',
    ),
  REDIS_WRITE_REPLICAS: Joi.number()
    .integer()
    .min(0)
    .max(5)
    .default(0)
    .description(
      "replicas of a Redis master that must hold a fast-mode quota decision's writes before it is answered (WAIT): 1 on a cluster with replicas, so a master's failover loses nothing answered; 0: answered once the master has it",
    ),
  REDIS_WRITE_TIMEOUT_MS: Joi.number()
    .integer()
    .min(1)
    .max(10_000)
    .default(500)
    .description('how long a decision waits for those replicas before it answers 503'),
  TEMPORAL_ADDRESS: Joi.string()
    .default('127.0.0.1:7233')
    .description('Temporal frontend host:port'),
  TEMPORAL_NAMESPACE: Joi.string().default('default').description('Temporal namespace'),
  TEMPORAL_TLS: Joi.boolean()
    .default(false)
    .description(
      "TLS to the Temporal frontend, the server's certificate checked against Node's roots (Temporal Cloud); implied by any TEMPORAL_TLS_* file or TEMPORAL_API_KEY",
    ),
  TEMPORAL_TLS_CA_FILE: Joi.string()
    .allow('')
    .default('')
    .description("PEM of the CA that signed the Temporal frontend's certificate (TLS on)"),
  TEMPORAL_TLS_CERT_FILE: Joi.string()
    .allow('')
    .default('')
    .description(
      'PEM certificate this process presents to Temporal (mTLS); needs TEMPORAL_TLS_KEY_FILE',
    ),
  TEMPORAL_TLS_KEY_FILE: Joi.string()
    .allow('')
    .default('')
    .description('PEM private key of TEMPORAL_TLS_CERT_FILE'),
  TEMPORAL_TLS_SERVER_NAME: Joi.string()
    .allow('')
    .default('')
    .description(
      "the name the frontend's certificate is checked against, when not TEMPORAL_ADDRESS's host (an address behind a proxy)",
    ),
  TEMPORAL_API_KEY: Joi.string()
    .allow('')
    .default('')
    .description(
      'API key sent as a bearer token on every Temporal call (Temporal Cloud); turns TLS on',
    ),
  TEMPORAL_PAYLOAD_KEYS: Joi.string()
    .allow('')
    .default('')
    .custom((value: string, helpers) => {
      const parsed = value === '' ? [] : parsePayloadKeys(value);
      return typeof parsed === 'string' ? labelledMessage(helpers, `: ${parsed}`) : value;
    })
    .description(
      'AES-256-GCM keys of Temporal payloads, `id:base64[,id:base64...]` (32 bytes each): the first encrypts, all decode (rotation: put the new key first, keep the old); every client and worker must hold the same keys. Empty: payloads in clear. scripts/stack env makes one per data dir',
    ),
  TEMPORAL_CODEC_CORS_ORIGINS: Joi.string()
    .allow('')
    .default('')
    .pattern(/^https?:\/\/[^\s,/]+(,https?:\/\/[^\s,/]+)*$/)
    .description(
      "origins (scheme://host:port, comma-separated) whose pages may call the codec endpoint with credentials: the Temporal Web UI's; scripts/stack env gives the local UI's",
    ),
  TASK_QUEUE_PREFIX: Joi.string()
    .allow('')
    .default('')
    .description(
      'prefix for every task queue name; lets a test run its own worker beside a live one',
    ),
  WORKER_ID: Joi.string()
    .pattern(/^[A-Za-z0-9._-]{1,64}$/)
    .default(
      os
        .hostname()
        .replace(/[^A-Za-z0-9._-]/g, '-')
        .slice(0, 64),
    )
    .description('id of this host; the Docker task queue of this worker is named after it'),
  DOCKER_SOCKET: Joi.string().default('/var/run/docker.sock').description('Docker engine socket'),
  REGISTRY_ADDRESS: Joi.string()
    .default('127.0.0.1:5000')
    .description('local image registry host:port'),
  BIND_HOST: Joi.string().default('127.0.0.1').description('address the HTTP servers listen on'),
  TRUSTED_PROXIES: Joi.string()
    .allow('')
    .default('')
    .custom((value: string, helpers) => {
      const problem = trustedProxiesProblem(trustedProxyList(value));
      return problem === null ? value : labelledMessage(helpers, `: ${problem}`);
    })
    .description(
      'load balancers and proxies in front of the APIs (comma-separated addresses, CIDR ranges, or loopback, linklocal, uniquelocal): a request from one of them is the client named in X-Forwarded-For (read from the right, through every trusted hop); empty: the socket peer is the client, X-Forwarded-For is ignored. The client address is what /metrics (private networks only) and the ledger edge limiter go by',
    ),
  WORKER_METRICS_PORT: Joi.number()
    .port()
    .default(PORT_SETTINGS.worker.byDefault)
    .description(
      "where a worker serves /metrics on BIND_HOST: the Temporal SDK's (task slots, schedule-to-start latency, sticky cache) and the process's; 0: a free port, logged at start",
    ),
  LEDGER_PORT: Joi.number().port().default(PORT_SETTINGS.ledger.byDefault),
  RUNS_PORT: Joi.number().port().default(PORT_SETTINGS.runs.byDefault),
  QUOTA_PORT: Joi.number().port().default(PORT_SETTINGS.quota.byDefault),
  LOG_LEVEL: Joi.string()
    .valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent')
    .default('info'),
  SHUTDOWN_GRACE_MS: Joi.number()
    .integer()
    .min(0)
    .default(10_000)
    .description('how long in-flight requests get to finish on SIGTERM'),
  // --- runs service ---
  RUNS_LOG_DIR: Joi.string()
    .default('.data/run-logs')
    .description(
      'runs: directory of run log files (stdout_file, stderr_file), relative to the cwd or absolute',
    ),
  RUNS_LOG_S3_ENDPOINT: Joi.string()
    .allow('')
    .default('')
    .uri({ scheme: ['http', 'https'] })
    .description(
      "runs: an S3-compatible object store for run logs (https://s3.example or a SeaweedFS or MinIO URL): the worker uploads each run's log as it captures it, the API pages it from any host. Empty: log files in RUNS_LOG_DIR (one host)",
    ),
  RUNS_LOG_S3_BUCKET: Joi.string()
    .pattern(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/)
    .default('run-logs')
    .description('runs: the bucket of run logs (made by the operator)'),
  RUNS_LOG_S3_REGION: Joi.string().default('us-east-1').description("runs: the bucket's region"),
  RUNS_LOG_S3_ACCESS_KEY_ID: Joi.string()
    .allow('')
    .default('')
    .description('runs: S3 access key id'),
  RUNS_LOG_S3_SECRET_ACCESS_KEY: Joi.string()
    .allow('')
    .default('')
    .description('runs: S3 secret access key'),
  RUNS_LOG_S3_PATH_STYLE: Joi.boolean()
    .default(true)
    .description(
      'runs: bucket in the path (SeaweedFS, MinIO) rather than in the host name (AWS virtual-hosted style)',
    ),
  RUNS_DOCKER_HOST: Joi.boolean()
    .default(true)
    .description(
      'runs: whether this worker is a Docker host (serves the Docker task queues and announces itself alive); false on a machine without Docker: it hosts the run workflows and their Postgres steps only',
    ),
  RUNS_RATE_LIMIT_REQUESTS: Joi.number()
    .integer()
    .min(1)
    .default(2000)
    .description('runs: requests one tenant may make per rate-limit window before 429'),
  RUNS_RATE_LIMIT_WINDOW_SECONDS: Joi.number()
    .integer()
    .min(1)
    .max(3600)
    .default(10)
    .description('runs: length of the per-tenant rate-limit window, started by its first request'),
  RUNS_RETENTION_SCHEDULE: Joi.boolean()
    .default(true)
    .description('runs: create the retention purge schedule at API start (tests turn it off)'),
  RUNS_SECRETS_KEY: Joi.string()
    .allow('')
    .default('')
    .custom((value: string, helpers) =>
      value === '' || parseSecretsKey(value) !== null
        ? value
        : helpers.message({ custom: '{{#label}} must be the base64 of exactly 32 bytes' }),
    )
    .description(
      "runs: base64 of 32 bytes, the AES-256-GCM key of template runs' secret parameters (workflow_secrets); empty: a template with secret params can be registered but not run (503 secrets_unavailable). scripts/stack env makes one per data dir",
    ),
  RUNS_QUOTA_KEY: Joi.string()
    .allow('')
    .default('')
    .pattern(/^qk_\S+$/)
    .description(
      "runs: the runs service's key of the quota service (scripts/quota-admin service-key create): metered keys' run seconds are reserved and committed there. Empty, or QUOTA_URL empty: metering is off (logged at start)",
    ),
  // --- end runs service ---
  // --- metering through the quota service (platform) ---
  QUOTA_URL: Joi.string()
    .allow('')
    .default('')
    .uri({ scheme: ['http', 'https'] })
    .description(
      "the quota service's base URL, where the runs service and the ledger meter their tenants (with RUNS_QUOTA_KEY, LEDGER_QUOTA_KEY). Empty: metering is off",
    ),
  // --- webhook delivery (platform) ---
  WEBHOOK_RETRY_DELAYS_SECONDS: Joi.string()
    .pattern(/^\d+(,\d+){0,9}$/)
    .default('10,60,300,1800')
    .description(
      'webhooks: seconds to wait before attempts 2, 3, ... of a delivery (at most one attempt more than there are waits; tests shorten them)',
    ),
  WEBHOOK_EGRESS_ALLOW: Joi.string()
    .allow('')
    .default('')
    .description(
      'webhooks: comma-separated CIDRs a delivery may reach although not public (loopback, private, link-local, ...); off by default, tests and a local setup allow 127.0.0.1/32; an entry that is not a CIDR stops the worker at start',
    ),
  WEBHOOK_CA_FILE: Joi.string()
    .allow('')
    .default('')
    .description(
      "webhooks: a PEM file of extra CAs trusted for receivers, beside Node's bundled roots (not the OS store), read once at worker start",
    ),
  WEBHOOK_ATTEMPT_TIMEOUT_MS: Joi.number()
    .integer()
    .min(100)
    .max(120_000)
    .default(10_000)
    .description('webhooks: one attempt, connect to response read, before it counts as a timeout'),
  // --- end webhook delivery ---
  // --- e-mail (platform) ---
  SMTP_URL: Joi.string()
    .uri({ scheme: ['smtp', 'smtps'] })
    .allow('')
    .default('')
    .description(
      "e-mail: the SMTP server alert mails go to, smtp://[user:pass@]host:port (STARTTLS when offered) or smtps:// (TLS from the start); empty: no mail is sent, each is recorded failed (smtp_unconfigured). scripts/stack env names the local stack's sink",
    ),
  ALERT_MAIL_FROM: Joi.string()
    .max(320)
    .default('Quota alerts <alerts@quota.localhost>')
    .description("e-mail: the From of alert mails (its domain also names each mail's Message-ID)"),
  // --- end e-mail ---
  // --- ledger service ---
  LEDGER_EDGE_RATE_PER_SECOND: Joi.number()
    .integer()
    .min(1)
    .default(10)
    .description('ledger: edge rate limit per source address, requests per second (token refill)'),
  LEDGER_EDGE_BURST: Joi.number()
    .integer()
    .min(1)
    .default(20)
    .description('ledger: edge rate limit burst per source address (bucket size)'),
  LEDGER_EDGE_BODY_LIMIT_BYTES: Joi.number()
    .integer()
    .min(1024)
    .default(64 * 1024)
    .description('ledger: body limit at the edge (413 past it); the app allows 1 MiB'),
  LEDGER_MONTHLY_CALL_QUOTA: Joi.number()
    .integer()
    .min(1)
    .default(10_000_000)
    .description(
      "ledger: calls per root tenant and UTC month before 429 QUOTA_EXCEEDED: the limit of the quota service's policy ledger-calls-per-month, set by the ledger at start",
    ),
  LEDGER_QUOTA_KEY: Joi.string()
    .allow('')
    .default('')
    .pattern(/^qk_\S+$/)
    .description(
      "ledger: the ledger's key of the quota service (scripts/platform-metering): each root tenant's calls are consumed there against the monthly call quota. Empty, or QUOTA_URL empty: metering is off (logged at start)",
    ),
  LEDGER_UNMETERED_REPLAY: Joi.boolean()
    .default(true)
    .description(
      'ledger: replay the calls served while the quota service did not answer into it, every 5 s (tests turn it off but where they exercise it)',
    ),
  LEDGER_HOLD_SWEEP_SCHEDULE: Joi.boolean()
    .default(true)
    .description('ledger: create schedule/<prefix>ledger-hold-sweep at start-up'),
  LEDGER_HOLD_SWEEP_INTERVAL_SECONDS: Joi.number()
    .integer()
    .min(1)
    .max(3600)
    .default(60)
    .description('ledger: how often the hold sweep schedule fires'),
  // --- end ledger service ---
  // --- quota service ---
  QUOTA_JOB_SCHEDULES: Joi.boolean()
    .default(true)
    .description("quota: create the background jobs' schedules at API start (tests turn them off)"),
  QUOTA_FLUSH_BUDGET_SECONDS: Joi.number()
    .integer()
    .min(1)
    .max(86_400)
    .default(300)
    .description(
      'quota: /healthz/worker answers 503 once a fast-mode ledger entry has waited this long to be flushed into Postgres',
    ),
  // --- end quota service ---
}).unknown(true);

/**
 * The secrets a deployment may mount as files, as Docker and Kubernetes secrets are: `<NAME>_FILE`
 * names a file whose content (less one trailing newline) is the value of NAME.
 */
export const SECRET_FILE_VARIABLES = [
  'DATABASE_URL',
  'REDIS_URL',
  'TEMPORAL_API_KEY',
  'TEMPORAL_PAYLOAD_KEYS',
  'RUNS_SECRETS_KEY',
  'RUNS_QUOTA_KEY',
  'LEDGER_QUOTA_KEY',
  'SMTP_URL',
] as const;

/** Every variable the configuration reads (a deployment's environment is checked against it). */
export const CONFIG_VARIABLES: readonly string[] = [
  ...Object.keys((schema.describe() as { keys: Record<string, unknown> }).keys),
  ...SECRET_FILE_VARIABLES.map((name) => `${name}_FILE`),
  ...TRACING_VARIABLES,
];

/** env with each `<NAME>_FILE` read into NAME; both set, or a file that cannot be read, is refused. */
function withSecretFiles(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const resolved = { ...env };
  for (const name of SECRET_FILE_VARIABLES) {
    const file = env[`${name}_FILE`];
    if (file === undefined || file === '') continue;
    if (env[name] !== undefined && env[name] !== '')
      throw new Error(`invalid configuration: set ${name} or ${name}_FILE, not both`);
    try {
      resolved[name] = fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new Error(`invalid configuration: ${name}_FILE "${file}" cannot be read (${why})`);
    }
  }
  return resolved;
}

export interface Config {
  databaseUrl: string;
  databasePoolSize: number;
  databaseStatementTimeoutMs: number;
  redisUrl: string;
  /** REDIS_CLUSTER_NODES; empty: one Redis at redisUrl. */
  redisClusterNodes: string[];
  /** REDIS_WRITE_REPLICAS, REDIS_WRITE_TIMEOUT_MS (db/redis.ts: durable scripts). */
  redisWriteReplicas: number;
  redisWriteTimeoutMs: number;
  temporalAddress: string;
  temporalNamespace: string;
  /** How this process reaches Temporal beyond its address: TLS and credentials (null: plaintext). */
  temporalTls: TemporalTls | null;
  /** TEMPORAL_API_KEY; null: none. */
  temporalApiKey: string | null;
  /** TEMPORAL_PAYLOAD_KEYS, the encrypting key first; empty: payloads in clear. */
  temporalPayloadKeys: PayloadKey[];
  /** TEMPORAL_CODEC_CORS_ORIGINS: the Web UI origins the codec endpoint answers. */
  temporalCodecCorsOrigins: string[];
  taskQueuePrefix: string;
  workerId: string;
  dockerSocket: string;
  registryAddress: string;
  bindHost: string;
  /** TRUSTED_PROXIES: whose X-Forwarded-For names the client (api/http/client-address.ts). */
  trustedProxies: string[];
  ports: { ledger: number; runs: number; quota: number };
  workerMetricsPort: number;
  logLevel: string;
  shutdownGraceMs: number;
  // --- runs service ---
  runs: {
    logDir: string;
    /** RUNS_LOG_S3_*: run logs in an object store; null: files in logDir. */
    logObjects: LogObjectsConfig | null;
    dockerHost: boolean;
    rateLimitRequests: number;
    rateLimitWindowSeconds: number;
    retentionSchedule: boolean;
    /** RUNS_SECRETS_KEY, 32 bytes; null: none configured. */
    secretsKey: Buffer | null;
    /** QUOTA_URL and RUNS_QUOTA_KEY; null: metering is off. */
    metering: MeteringConfig | null;
  };
  // --- end runs service ---
  webhooks: {
    retryDelaysSeconds: number[];
    egressAllow: string[];
    caFile: string | null;
    attemptTimeoutMs: number;
  };
  mail: {
    /** SMTP_URL; null: none configured. */
    smtpUrl: string | null;
    from: string;
  };
  // --- ledger service ---
  ledger: {
    edgeRatePerSecond: number;
    edgeBurst: number;
    edgeBodyLimitBytes: number;
    monthlyCallQuota: number;
    /** QUOTA_URL and LEDGER_QUOTA_KEY; null: metering is off. */
    metering: MeteringConfig | null;
    unmeteredReplay: boolean;
    holdSweepSchedule: boolean;
    holdSweepIntervalSeconds: number;
  };
  // --- end ledger service ---
  quota: {
    jobSchedules: boolean;
    flushBudgetSeconds: number;
  };
}

/** Where a service meters its tenants: the quota service, with a key of its own. */
export interface MeteringConfig {
  quotaUrl: string;
  apiKey: string;
}

/** Where run logs go in an object store (services/runs/log-objects.ts). */
export interface LogObjectsConfig {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  pathStyle: boolean;
}

/** Files are paths, read when the connection is made (platform/temporal.ts). */
export interface TemporalTls {
  caFile: string | null;
  /** mTLS: this process's certificate and key. */
  clientCert: { certFile: string; keyFile: string } | null;
  serverName: string | null;
}

/** The environment as the schema validated and converted it. */
interface ValidatedEnv {
  DATABASE_URL: string;
  DATABASE_POOL_SIZE: number;
  DATABASE_STATEMENT_TIMEOUT_MS: number;
  REDIS_URL: string;
  REDIS_CLUSTER_NODES: string;
  REDIS_WRITE_REPLICAS: number;
  REDIS_WRITE_TIMEOUT_MS: number;
  TEMPORAL_ADDRESS: string;
  TEMPORAL_NAMESPACE: string;
  TEMPORAL_TLS: boolean;
  TEMPORAL_TLS_CA_FILE: string;
  TEMPORAL_TLS_CERT_FILE: string;
  TEMPORAL_TLS_KEY_FILE: string;
  TEMPORAL_TLS_SERVER_NAME: string;
  TEMPORAL_API_KEY: string;
  TEMPORAL_PAYLOAD_KEYS: string;
  TEMPORAL_CODEC_CORS_ORIGINS: string;
  TASK_QUEUE_PREFIX: string;
  WORKER_ID: string;
  DOCKER_SOCKET: string;
  REGISTRY_ADDRESS: string;
  BIND_HOST: string;
  TRUSTED_PROXIES: string;
  LEDGER_PORT: number;
  RUNS_PORT: number;
  QUOTA_PORT: number;
  WORKER_METRICS_PORT: number;
  LOG_LEVEL: string;
  SHUTDOWN_GRACE_MS: number;
  RUNS_LOG_DIR: string;
  RUNS_LOG_S3_ENDPOINT: string;
  RUNS_LOG_S3_BUCKET: string;
  RUNS_LOG_S3_REGION: string;
  RUNS_LOG_S3_ACCESS_KEY_ID: string;
  RUNS_LOG_S3_SECRET_ACCESS_KEY: string;
  RUNS_LOG_S3_PATH_STYLE: boolean;
  RUNS_DOCKER_HOST: boolean;
  RUNS_RATE_LIMIT_REQUESTS: number;
  RUNS_RATE_LIMIT_WINDOW_SECONDS: number;
  RUNS_RETENTION_SCHEDULE: boolean;
  RUNS_SECRETS_KEY: string;
  RUNS_QUOTA_KEY: string;
  QUOTA_URL: string;
  WEBHOOK_RETRY_DELAYS_SECONDS: string;
  WEBHOOK_EGRESS_ALLOW: string;
  WEBHOOK_CA_FILE: string;
  WEBHOOK_ATTEMPT_TIMEOUT_MS: number;
  SMTP_URL: string;
  ALERT_MAIL_FROM: string;
  LEDGER_EDGE_RATE_PER_SECOND: number;
  LEDGER_EDGE_BURST: number;
  LEDGER_EDGE_BODY_LIMIT_BYTES: number;
  LEDGER_MONTHLY_CALL_QUOTA: number;
  LEDGER_QUOTA_KEY: string;
  LEDGER_UNMETERED_REPLAY: boolean;
  LEDGER_HOLD_SWEEP_SCHEDULE: boolean;
  LEDGER_HOLD_SWEEP_INTERVAL_SECONDS: number;
  QUOTA_JOB_SCHEDULES: boolean;
  QUOTA_FLUSH_BUDGET_SECONDS: number;
}

function temporalTlsOf(v: ValidatedEnv): TemporalTls | null {
  const orNull = (value: string) => (value === '' ? null : value);
  const [certFile, keyFile] = [orNull(v.TEMPORAL_TLS_CERT_FILE), orNull(v.TEMPORAL_TLS_KEY_FILE)];
  if ((certFile === null) !== (keyFile === null))
    throw new Error(
      'invalid configuration: TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE go together (mTLS needs both)',
    );
  const tls: TemporalTls = {
    caFile: orNull(v.TEMPORAL_TLS_CA_FILE),
    clientCert: certFile && keyFile ? { certFile, keyFile } : null,
    serverName: orNull(v.TEMPORAL_TLS_SERVER_NAME),
  };
  const wanted =
    v.TEMPORAL_TLS || v.TEMPORAL_API_KEY !== '' || Object.values(tls).some((x) => x !== null);
  return wanted ? tls : null;
}

/** The configuration from the environment, validated once at start-up (a bad value stops it). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result: Joi.ValidationResult<unknown> = schema.validate(withSecretFiles(env), {
    abortEarly: false,
    convert: true,
  });
  if (result.error) {
    throw new Error(
      `invalid configuration: ${result.error.details.map((d) => d.message).join('; ')}`,
    );
  }
  return configOf(result.value as ValidatedEnv);
}

function configOf(v: ValidatedEnv): Config {
  return {
    databaseUrl: v.DATABASE_URL,
    databasePoolSize: v.DATABASE_POOL_SIZE,
    databaseStatementTimeoutMs: v.DATABASE_STATEMENT_TIMEOUT_MS,
    redisUrl: v.REDIS_URL,
    redisClusterNodes: v.REDIS_CLUSTER_NODES.split(',').filter(Boolean),
    redisWriteReplicas: v.REDIS_WRITE_REPLICAS,
    redisWriteTimeoutMs: v.REDIS_WRITE_TIMEOUT_MS,
    temporalAddress: v.TEMPORAL_ADDRESS,
    temporalNamespace: v.TEMPORAL_NAMESPACE,
    temporalTls: temporalTlsOf(v),
    temporalApiKey: v.TEMPORAL_API_KEY === '' ? null : v.TEMPORAL_API_KEY,
    temporalPayloadKeys:
      v.TEMPORAL_PAYLOAD_KEYS === ''
        ? []
        : (parsePayloadKeys(v.TEMPORAL_PAYLOAD_KEYS) as PayloadKey[]),
    temporalCodecCorsOrigins: v.TEMPORAL_CODEC_CORS_ORIGINS.split(',').filter(Boolean),
    taskQueuePrefix: v.TASK_QUEUE_PREFIX,
    workerId: v.WORKER_ID,
    dockerSocket: v.DOCKER_SOCKET,
    registryAddress: v.REGISTRY_ADDRESS,
    bindHost: v.BIND_HOST,
    trustedProxies: trustedProxyList(v.TRUSTED_PROXIES),
    ports: { ledger: v.LEDGER_PORT, runs: v.RUNS_PORT, quota: v.QUOTA_PORT },
    workerMetricsPort: v.WORKER_METRICS_PORT,
    logLevel: v.LOG_LEVEL,
    shutdownGraceMs: v.SHUTDOWN_GRACE_MS,
    runs: runsConfigOf(v),
    webhooks: webhooksConfigOf(v),
    mail: { smtpUrl: v.SMTP_URL === '' ? null : v.SMTP_URL, from: v.ALERT_MAIL_FROM },
    ledger: ledgerConfigOf(v),
    quota: {
      jobSchedules: v.QUOTA_JOB_SCHEDULES,
      flushBudgetSeconds: v.QUOTA_FLUSH_BUDGET_SECONDS,
    },
  };
}

const runsConfigOf = (v: ValidatedEnv): Config['runs'] => ({
  logDir: v.RUNS_LOG_DIR,
  logObjects:
    v.RUNS_LOG_S3_ENDPOINT === ''
      ? null
      : {
          endpoint: v.RUNS_LOG_S3_ENDPOINT,
          bucket: v.RUNS_LOG_S3_BUCKET,
          region: v.RUNS_LOG_S3_REGION,
          accessKeyId: v.RUNS_LOG_S3_ACCESS_KEY_ID,
          secretAccessKey: v.RUNS_LOG_S3_SECRET_ACCESS_KEY,
          pathStyle: v.RUNS_LOG_S3_PATH_STYLE,
        },
  dockerHost: v.RUNS_DOCKER_HOST,
  rateLimitRequests: v.RUNS_RATE_LIMIT_REQUESTS,
  rateLimitWindowSeconds: v.RUNS_RATE_LIMIT_WINDOW_SECONDS,
  retentionSchedule: v.RUNS_RETENTION_SCHEDULE,
  secretsKey: v.RUNS_SECRETS_KEY === '' ? null : parseSecretsKey(v.RUNS_SECRETS_KEY),
  metering: meteringOf(v.QUOTA_URL, v.RUNS_QUOTA_KEY),
});

const meteringOf = (quotaUrl: string, apiKey: string): MeteringConfig | null =>
  quotaUrl === '' || apiKey === '' ? null : { quotaUrl: quotaUrl.replace(/\/+$/, ''), apiKey };

const webhooksConfigOf = (v: ValidatedEnv): Config['webhooks'] => ({
  retryDelaysSeconds: v.WEBHOOK_RETRY_DELAYS_SECONDS.split(',').map(Number),
  egressAllow: v.WEBHOOK_EGRESS_ALLOW.split(',')
    .map((cidr) => cidr.trim())
    .filter((cidr) => cidr !== ''),
  caFile: v.WEBHOOK_CA_FILE === '' ? null : v.WEBHOOK_CA_FILE,
  attemptTimeoutMs: v.WEBHOOK_ATTEMPT_TIMEOUT_MS,
});

const ledgerConfigOf = (v: ValidatedEnv): Config['ledger'] => ({
  edgeRatePerSecond: v.LEDGER_EDGE_RATE_PER_SECOND,
  edgeBurst: v.LEDGER_EDGE_BURST,
  edgeBodyLimitBytes: v.LEDGER_EDGE_BODY_LIMIT_BYTES,
  monthlyCallQuota: v.LEDGER_MONTHLY_CALL_QUOTA,
  metering: meteringOf(v.QUOTA_URL, v.LEDGER_QUOTA_KEY),
  unmeteredReplay: v.LEDGER_UNMETERED_REPLAY,
  holdSweepSchedule: v.LEDGER_HOLD_SWEEP_SCHEDULE,
  holdSweepIntervalSeconds: v.LEDGER_HOLD_SWEEP_INTERVAL_SECONDS,
});

/** One line per key for `--help` style output and the README. */
export function describeConfig(): string[] {
  const described = schema.describe() as {
    keys: Record<string, { flags?: { default?: unknown; description?: string } }>;
  };
  return [
    ...Object.entries(described.keys).map(([key, d]) =>
      `${key}=${JSON.stringify(d.flags?.default ?? '')}  ${d.flags?.description ?? ''}`.trimEnd(),
    ),
    `<NAME>_FILE=""  a file holding NAME's value (a mounted secret), for ${SECRET_FILE_VARIABLES.join(', ')}`,
  ];
}
