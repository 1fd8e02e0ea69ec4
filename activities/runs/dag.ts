import fs from 'node:fs/promises';
import type { DatabasePool } from '../../db/pool';
import {
  attemptSource,
  insertNodeRun,
  loadDag,
  nodeRunEnd,
  recordDagChanges,
  type AttemptSource,
  type DagChanges,
  type LoadedDag,
  type NodeChange,
  type NodeRun,
} from '../../db/runs/dag-changes';
import { nextWorkingInstant, parseWorkingHours } from '../../services/runs/working-hours';
import type { RunWorkflowInput } from '../../contracts/runs/run';
import { INPUTS_MAX_BYTES, OUTPUT_MAX_BYTES, type DagRunTerms } from '../../contracts/runs/dag';
import { inputVariable } from '../../contracts/runs/dag-rules';
import { decryptWorkflowSecret } from '../../platform/secrets';
import { workflowSecrets } from '../../db/runs/workflows';
import { substituteSecrets } from '../../services/runs/templates/substitution';
import type { LogObjects, RunRef } from '../../services/runs/log-objects';
import { holdRunSeconds, type Reservation, type RunsMetering } from '../../services/runs/metering';

/** One attempt of a container node, as the DAG workflow asks for it. */
export interface NodeAttempt {
  workflowId: string;
  tenantId: string;
  ref: string;
  trackId: string;
  /** The node's change (to running, or to failed when its inputs are too large). */
  change: Omit<NodeChange, 'to'>;
  terms: DagRunTerms;
}

/** The end of a node attempt: the node's change, and the run whose exit and output it takes. */
export interface NodeAttemptEnd {
  changes: DagChanges;
  trackId: string;
}

/** One write of writeNodeAttempts. */
export type NodeAttemptWrite = { launch: NodeAttempt } | { end: NodeAttemptEnd };

/**
 * Why a node fails without a run: its inputs, its secrets that cannot be read here, or a
 * metered key's day without the seconds of its timeout left.
 */
export type LaunchRefusal = 'inputs_too_large' | 'secrets_unavailable' | 'metered_quota_exceeded';
export type LaunchedAttempt = { run: RunWorkflowInput } | { failed: LaunchRefusal };

/** What the DAG activities read and write through. */
interface DagActivityDeps {
  pool: DatabasePool;
  secretsKey: Buffer | null;
  /** RUNS_LOG_S3_*: a node's stdout is in the object store, not in a file of its host. */
  logObjects: LogObjects | null;
  metering: RunsMetering | null;
}

/**
 * The Postgres activities of the DAG workflow (run as local activities). Each write is keyed by
 * an event id the workflow made, so a retried activity writes once.
 */
export function createDagActivities(deps: DagActivityDeps) {
  return {
    async loadDag(input: { workflowId: string }): Promise<LoadedDag | null> {
      return loadDag(deps.pool, input.workflowId);
    },

    async recordDagChanges(changes: DagChanges) {
      return recordDagChanges(deps.pool, changes);
    },

    /**
     * A node attempt: its run row and the node's change to running. The run's env is the
     * node's, with the upstream outputs injected as SVC_INPUT_* variables and a template run's
     * secret parameters decrypted into the values that name them; the row keeps the secrets'
     * placeholders, so no read shows them. Injected inputs past INPUTS_MAX_BYTES, or secrets
     * this worker cannot decrypt, fail the node without a run.
     */
    async launchNodeAttempt(attempt: NodeAttempt): Promise<LaunchedAttempt> {
      return launchNodeAttempt(deps, attempt);
    },

    /**
     * The end of a node attempt: its run's exit code and output (the JSON of its last stdout
     * line) recorded with the node's change.
     */
    async endNodeAttempt(input: NodeAttemptEnd): Promise<void> {
      return endNodeAttempt(deps, input);
    },

    /**
     * The launches and ends of node attempts that one workflow activation asked for, written in
     * the order asked by ONE local activity (a fan-out's launches, a node's end and the launch
     * after it): each answers as launchNodeAttempt or endNodeAttempt would (an end: null).
     */
    async writeNodeAttempts(input: {
      items: NodeAttemptWrite[];
    }): Promise<(LaunchedAttempt | null)[]> {
      return writeNodeAttempts(deps, input.items);
    },
  };
}
export type DagActivities = ReturnType<typeof createDagActivities>;

async function writeNodeAttempts(
  deps: DagActivityDeps,
  items: NodeAttemptWrite[],
): Promise<(LaunchedAttempt | null)[]> {
  const answers: (LaunchedAttempt | null)[] = [];
  // One after another: a launch reads its upstream nodes' outputs, written by their ends.
  for (const item of items) {
    if ('launch' in item) answers.push(await launchNodeAttempt(deps, item.launch));
    else answers.push(await endNodeAttempt(deps, item.end).then(() => null));
  }
  return answers;
}

/**
 * Refusals come first and the seconds are held last, just before the row: a node refused for its
 * inputs or its secrets holds no seconds.
 */
async function launchNodeAttempt(
  deps: DagActivityDeps,
  attempt: NodeAttempt,
): Promise<LaunchedAttempt> {
  const source = await attemptSource(deps.pool, attempt.workflowId, attempt.ref);
  const injected = injectedInputs(source);
  if (injected === null) return refuseNodeAttempt(deps.pool, attempt, 'inputs_too_large');
  const secrets = await secretsOf(deps, attempt.workflowId);
  if (secrets === null) return refuseNodeAttempt(deps.pool, attempt, 'secrets_unavailable');
  const run = runInput(attempt, source, injected, secrets);
  const held = await holdNodeRunSeconds(deps.metering, run, source.keyId);
  if (held && 'refused' in held)
    return refuseNodeAttempt(deps.pool, attempt, 'metered_quota_exceeded');
  await insertNodeRun(
    deps.pool,
    nodeRunRow(attempt, source, injected, run, held?.reservationId ?? null),
    {
      workflowId: attempt.workflowId,
      tenantId: attempt.tenantId,
      nodes: [{ ...attempt.change, to: 'running' }],
    },
  );
  return { run };
}

/** The node fails with output {error: <why>}, without a run. */
async function refuseNodeAttempt(
  pool: DatabasePool,
  attempt: NodeAttempt,
  why: LaunchRefusal,
): Promise<LaunchedAttempt> {
  await recordDagChanges(pool, {
    workflowId: attempt.workflowId,
    tenantId: attempt.tenantId,
    nodes: [
      {
        ...attempt.change,
        to: 'failed',
        detail: { ...attempt.change.detail, error: why },
        fields: { output: { error: why }, exit_code: null },
      },
    ],
  });
  return { failed: why };
}

/**
 * The seconds of a metered key's run held before its row exists; null for a run without a key.
 * Keyed by the run's track id (the workflow's): a retried launch holds the same seconds.
 */
async function holdNodeRunSeconds(
  metering: RunsMetering | null,
  run: RunWorkflowInput,
  keyId: string | null,
): Promise<Reservation | null> {
  return keyId === null
    ? null
    : holdRunSeconds(metering, { ...run, key: { tenantId: run.tenantId, keyId } });
}

/**
 * The run row of a node attempt. Its env keeps the secrets' placeholders (the spec's), so no
 * read shows them; the run's own input carries them decrypted.
 */
function nodeRunRow(
  attempt: NodeAttempt,
  source: AttemptSource,
  injected: Record<string, string>,
  run: RunWorkflowInput,
  quotaReservationId: string | null,
): NodeRun {
  return {
    trackId: run.trackId,
    tenantId: run.tenantId,
    keyId: source.keyId,
    workflowId: attempt.workflowId,
    nodeRef: attempt.ref,
    image: run.image,
    command: run.command,
    env: { ...source.spec.env, ...injected },
    name: source.name,
    tags: source.tags,
    eligibleStart: run.eligibleStart,
    workingHoursApplied: run.workingHoursTjp !== null,
    maxQueueSeconds: run.maxQueueSeconds,
    cpuLimit: run.cpuLimit,
    memoryLimitMb: run.memoryLimitMb,
    timeoutSeconds: run.timeoutSeconds,
    metered: run.metered,
    quotaReservationId,
  };
}

async function endNodeAttempt(deps: DagActivityDeps, input: NodeAttemptEnd): Promise<void> {
  const ended = await nodeRunEnd(deps.pool, input.trackId);
  const run = { tenantId: input.changes.tenantId, trackId: input.trackId };
  const output = ended?.stdoutFile ? await outputOf(ended.stdoutFile, run, deps.logObjects) : null;
  const [node, ...rest] = input.changes.nodes!;
  const fields = { exit_code: ended?.exitCode ?? null, output };
  const detail = { ...node!.detail, has_output: output !== null };
  await recordDagChanges(deps.pool, {
    ...input.changes,
    nodes: [{ ...node!, fields, detail }, ...rest],
  });
}

/** The SVC_INPUT_* variables of a node, or null when their values pass INPUTS_MAX_BYTES. */
export function injectedInputs(source: AttemptSource): Record<string, string> | null {
  const env: Record<string, string> = {};
  let bytes = 0;
  for (const { ref, output } of source.inputs) {
    const value = JSON.stringify(output ?? null);
    bytes += oversizedBytes(output) ?? Buffer.byteLength(value, 'utf8');
    env[inputVariable(ref)] = value;
  }
  return bytes > INPUTS_MAX_BYTES ? null : env;
}

/** An output too large to keep stands for its real size (see outputOf). */
function oversizedBytes(output: unknown): number | null {
  const o = output as { error?: unknown; bytes?: unknown } | null;
  return o?.error === 'output_too_large' && typeof o.bytes === 'number' ? o.bytes : null;
}

/** A template run's secret parameters in clear, by name; null when this worker has no key. */
async function secretsOf(
  deps: { pool: DatabasePool; secretsKey: Buffer | null },
  workflowId: string,
): Promise<Map<string, string> | null> {
  const rows = await workflowSecrets(deps.pool, workflowId);
  if (rows.length === 0) return new Map();
  if (deps.secretsKey === null) return null;
  const key = deps.secretsKey;
  return new Map(
    rows.map((r) => [r.name, decryptWorkflowSecret(key, workflowId, r.name, r.ciphertext)]),
  );
}

function runInput(
  attempt: NodeAttempt,
  source: AttemptSource,
  injected: Record<string, string>,
  secrets: ReadonlyMap<string, string>,
): RunWorkflowInput {
  const { spec } = source;
  const { terms } = attempt;
  const start = eligibleStart(terms.workingHoursTjp, new Date());
  return {
    trackId: attempt.trackId,
    tenantId: attempt.tenantId,
    image: spec.image!,
    command: spec.command,
    env: {
      ...Object.fromEntries(
        Object.entries(spec.env).map(([name, value]) => [name, substituteSecrets(value, secrets)]),
      ),
      ...injected,
    },
    cpuLimit: spec.cpu_limit!,
    memoryLimitMb: spec.memory_limit_mb!,
    timeoutSeconds: spec.timeout_seconds!,
    eligibleStart: start.at,
    expiresAt: null,
    maxQueueSeconds: terms.maxQueueSeconds,
    tierConcurrentRuns: terms.tierConcurrentRuns,
    metered: terms.metered,
    dockerAnyHostQueue: terms.dockerAnyHostQueue,
    workingHoursTjp: start.workingHours ? terms.workingHoursTjp : null,
  };
}

/** Now, or the next working instant under the tenant's working hours (as a run's submit). */
function eligibleStart(tjp: string | null, now: Date): { at: string; workingHours: boolean } {
  const next =
    tjp === null ? null : nextWorkingInstant(parseWorkingHours(tjp, { stored: true }), now);
  if (next === null) return { at: now.toISOString(), workingHours: false };
  return { at: new Date(Math.ceil(next.getTime())).toISOString(), workingHours: true };
}

type LastLine = { text: string } | { tooLarge: number } | null;

/**
 * A node's output: the JSON of the last line of its stdout (trailing newlines aside); null when
 * there is none or it is not JSON. A last line over OUTPUT_MAX_BYTES is not kept: the output is
 * {error: output_too_large, bytes}, and a node that takes it as input fails inputs_too_large.
 * The stdout is the run's record of it: a file of its host, or objects (s3://) read from any.
 */
export async function outputOf(
  stdout: string,
  run: RunRef,
  logObjects: LogObjects | null,
): Promise<unknown> {
  const line = stdout.startsWith('s3://')
    ? await lastObjectLine(run, logObjects)
    : await lastLine(stdout);
  if (line === null) return null;
  if ('tooLarge' in line) return { error: 'output_too_large', bytes: line.tooLarge };
  try {
    return JSON.parse(line.text) as unknown;
  } catch {
    return null;
  }
}

/** The stream's last line in the object store (chunks hold whole lines). */
async function lastObjectLine(run: RunRef, logObjects: LogObjects | null): Promise<LastLine> {
  if (logObjects === null) return null;
  const text = (await logObjects.readPage(run, 'stdout', null, 1))?.lines[0];
  return text === undefined ? null : kept(text);
}

/** A whole last line, or its size when it is too large to keep. */
function kept(text: string): LastLine {
  const bytes = Buffer.byteLength(text);
  return bytes > OUTPUT_MAX_BYTES ? { tooLarge: bytes } : { text };
}

/** The file's last line, read from its end (at most OUTPUT_MAX_BYTES + a little). */
async function lastLine(file: string): Promise<LastLine> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch {
    return null;
  }
  try {
    const size = (await handle.stat()).size;
    const window = Math.min(size, OUTPUT_MAX_BYTES + 2);
    const buffer = Buffer.alloc(window);
    await handle.read(buffer, 0, window, size - window);
    let end = window;
    while (end > 0 && (buffer[end - 1] === 0x0a || buffer[end - 1] === 0x0d)) end--;
    if (end === 0) return null;
    const newline = buffer.lastIndexOf(0x0a, end - 1);
    // The line starts before the window: at least `end` bytes (more than any input may carry).
    if (newline === -1 && window < size) return { tooLarge: end };
    const text = buffer.subarray(newline + 1, end).toString('utf8');
    return kept(text);
  } finally {
    await handle.close();
  }
}
