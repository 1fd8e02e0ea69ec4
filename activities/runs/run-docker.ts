import type { Readable } from 'node:stream';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { DatabasePool } from '../../db/pool';
import type { Redis } from '../../db/redis';
import { insertUtilizationSample } from '../../db/runs/utilization';
import { findContainerOutcome, keepContainerOutcome } from '../../db/runs/container-outcomes';
import type { Docker } from '../../platform/docker';
import { OWNER_LABEL, findOwnedContainer, pullImageOrFail } from '../docker/containers';
import { sampleOf, type DockerStats } from '../docker/stats';
import { LogCapture } from './log-capture';
import { settleRunEnd, type RunEnd } from './run';
import type { RunsMetering } from '../../services/runs/metering';
import {
  findRunStanding,
  transitionRun,
  type Transition,
  type TransitionOutcome,
} from '../../db/runs/runs';
import {
  TRACK_ID_LABEL,
  runContainerName,
  runContainerOwner,
  type RunWorkflowInput,
} from '../../contracts/runs/run';
import type { LogObjects } from '../../services/runs/log-objects';

export const TENANT_LABEL = 'platform.runs.tenant_id';
/** The host (WORKER_ID) that made the container: it alone removes it once its run has ended. */
export const WORKER_LABEL = 'platform.runs.worker_id';
const HEARTBEAT_INTERVAL_MS = 2_000;
/**
 * Utilization is streamed only once a container has run this long: a trivial container is
 * gone before its first reading, and streaming it cost dockerd a stats collection for nothing.
 */
export const STATS_START_DELAY_MS = 500;
/** docker stats streams one reading per second; we keep one sample per reading. */
const BYTES_PER_MB = 1024 * 1024;

/** The run's container, and the state of a run launched before this call (else running). */
export interface LaunchedContainer {
  containerId: string;
  state?: 'running' | 'paused';
  /** When the container was started (epoch ms): the refund counts the seconds from here. */
  startedAtMs?: number;
}

export interface ContainerOutcome {
  exitCode: number | null;
  /** Docker's own error text when the container could not run (e.g. a bad command). */
  error: string | null;
  stdoutBytes: number;
  stderrBytes: number;
  resultSummary: string;
  stdoutFile: string;
  stderrFile: string;
  /** The follow activity removed the container (asked to with removeOnExit). */
  removed?: boolean;
}

const isHttpStatus = (error: unknown, ...codes: number[]) =>
  codes.includes((error as { statusCode?: number }).statusCode ?? 0);

/**
 * A pull of the same reference finished this recently on this host counts for a run that
 * asks now: the runs that share it ran the image the registry served moments ago. Concurrent
 * runs of one image share one pull (single flight) instead of queueing N pulls in dockerd.
 */
export const PULL_FRESH_MS = 2_000;

/**
 * Docker activities of one run, on the task queue of the host whose daemon they call. Each is
 * idempotent: the container is found by its name (by its owner label if made before names),
 * never made twice.
 */
export function createRunDockerActivities(deps: {
  docker: Docker;
  pool: DatabasePool;
  redis: Redis;
  workerId: string;
  logDir: string;
  /** RUNS_LOG_S3_*: run logs go to the object store instead of logDir. */
  logObjects: LogObjects | null;
  metering: RunsMetering | null;
}) {
  const { docker } = deps;
  /**
   * The run's container: by its name (one inspect), else by its owner label (one list), for a
   * container made before containers were named. Null when there is none.
   */
  const owned = async (
    trackId: string,
  ): Promise<{
    container: Docker.Container;
    state: Docker.ContainerInspectInfo['State'];
  } | null> => {
    try {
      const inspected = await docker.getContainer(runContainerName(trackId)).inspect();
      return { container: docker.getContainer(inspected.Id), state: inspected.State };
    } catch (error) {
      if (!isHttpStatus(error, 404)) throw error;
    }
    const info = await findOwnedContainer(docker, runContainerOwner(trackId));
    if (!info) return null;
    const container = docker.getContainer(info.Id);
    return { container, state: (await container.inspect()).State };
  };
  const pulls = new Map<string, { promise: Promise<void>; doneAt: number | null }>();
  /** pullImageOrFail, shared by runs of one reference (see PULL_FRESH_MS). */
  const pullShared = (image: string): Promise<void> => {
    const known = pulls.get(image);
    if (known && (known.doneAt === null || Date.now() - known.doneAt < PULL_FRESH_MS))
      return known.promise;
    const entry: { promise: Promise<void>; doneAt: number | null } = {
      promise: pullImageOrFail(docker, image).then(
        () => {
          entry.doneAt = Date.now();
        },
        (error: unknown) => {
          pulls.delete(image);
          throw error;
        },
      ),
      doneAt: null,
    };
    pulls.set(image, entry);
    return entry.promise;
  };

  /**
   * Creates and starts the run's container: create (named after the run) and start, two calls.
   * A retry, or a name already taken (an earlier attempt made it), finds the container first
   * and only starts it if it is still `created`.
   */
  const startContainer = async (input: RunWorkflowInput): Promise<{ containerId: string }> => {
    const retried = Context.current().info.attempt > 1;
    let found = retried ? await owned(input.trackId) : null;
    if (!found) {
      try {
        const made = await docker.createContainer(containerSpec(input, deps.workerId));
        found = {
          container: made,
          state: { Status: 'created' } as Docker.ContainerInspectInfo['State'],
        };
      } catch (error) {
        if (isHttpStatus(error, 409)) found = await owned(input.trackId);
        else if (isHttpStatus(error, 400, 404))
          throw ApplicationFailure.nonRetryable((error as Error).message, 'StartFailed');
        else throw error;
      }
      if (!found) throw new Error(`container ${runContainerName(input.trackId)} vanished`);
    }
    if (found.state.Status === 'created') {
      try {
        await found.container.start();
      } catch (error) {
        if (!isHttpStatus(error, 304)) {
          throw ApplicationFailure.nonRetryable(
            `cannot start container: ${(error as Error).message}`,
            'StartFailed',
          );
        }
      }
    }
    return { containerId: found.container.id };
  };
  /** Removes the run's container: by name (one call), by label for an unnamed one. */
  const removeContainer = async (trackId: string): Promise<void> => {
    // 404: already gone; 409: its removal is already under way.
    const ignoreGone = (error: unknown) => {
      if (!isHttpStatus(error, 404, 409)) throw error;
    };
    try {
      await docker.getContainer(runContainerName(trackId)).remove({ force: true });
      return;
    } catch (error) {
      ignoreGone(error);
      if (!isHttpStatus(error, 404)) return;
    }
    const info = await findOwnedContainer(docker, runContainerOwner(trackId));
    if (info) await docker.getContainer(info.Id).remove({ force: true }).catch(ignoreGone);
  };

  return {
    /**
     * pulling → running in one activity: pull (shared, see PULL_FRESH_MS), create and start
     * the container, then the transition with its container id and started_at. Idempotent:
     * the container is found by its name and the transition keyed by the workflow's event id.
     * A pull or start failure is thrown before the transition (the run is still pulling).
     */
    async launchRunContainer(input: {
      run: RunWorkflowInput;
      transition: Omit<Transition, 'fields'>;
    }): Promise<LaunchedContainer> {
      const launched = await alreadyLaunched(input.run.trackId);
      if (launched) return launched;
      await pullShared(input.run.image);
      const { containerId } = await startContainer(input.run);
      const startedAtMs = Date.now();
      await transitionRun(deps.pool, {
        ...input.transition,
        fields: { container_id: containerId, started_at: 'now' },
      });
      return { containerId, startedAtMs };
    },

    /**
     * The end of a run in one activity: its terminal transition, the container removed, the
     * slot's waiting runs woken and a metered key's unused seconds refunded. Each step is
     * idempotent, so a retry repeats only what did not happen.
     */
    async finishRun(input: RunEnd): Promise<TransitionOutcome> {
      const outcome = await transitionRun(deps.pool, input.transition);
      await removeContainer(input.transition.trackId);
      await settleRunEnd(deps, input);
      return outcome;
    },

    /**
     * Follows the container to its exit: its output into the log files and cache, a
     * utilization sample per docker stats reading, a heartbeat every few seconds. A retry
     * (worker restarted) re-attaches to the same container and re-reads its log from the start.
     */
    async followRunContainer(input: {
      trackId: string;
      tenantId: string;
      memoryLimitMb: number;
      /**
       * Remove the container once it has exited and its output is captured (the workflow then
       * records the end without a host activity). The outcome is committed to Postgres first
       * (runs.container_outcomes), so a retry that finds the container removed still answers it.
       */
      removeOnExit?: boolean;
    }): Promise<ContainerOutcome> {
      const attached = await attachLogs(input.trackId);
      if (!attached) {
        const kept = input.removeOnExit ? await keptOutcome(input.trackId) : null;
        if (kept) return kept;
        throw ApplicationFailure.nonRetryable('the run container is gone', 'ContainerLost');
      }
      const { container, logStream } = attached;
      const capture = new LogCapture(deps.redis, deps, input);
      const heartbeat = setInterval(() => Context.current().heartbeat(), HEARTBEAT_INTERVAL_MS);
      // A container that is gone within STATS_START_DELAY_MS is never streamed: a stats stream
      // costs dockerd a collector round and the worker a sample row for a reading or none.
      let stopStats = () => {};
      const statsTimer = setTimeout(() => {
        stopStats = followStats(container, (stats) =>
          insertUtilizationSample(deps.pool, input.trackId, input.memoryLimitMb, sampleOf(stats)),
        );
      }, STATS_START_DELAY_MS);
      try {
        await capture.reset();
        await demultiplexInto(logStream, capture);
        const waited = (await container.wait()) as {
          StatusCode: number;
          Error?: { Message?: string } | null;
        };
        const totals = await capture.close();
        const outcome: ContainerOutcome = {
          exitCode: waited.StatusCode,
          error: waited.Error?.Message || null,
          ...totals,
          stdoutFile: capture.files.stdout,
          stderrFile: capture.files.stderr,
          removed: false,
        };
        if (!input.removeOnExit) return outcome;
        const removed = { ...outcome, removed: true };
        await keepContainerOutcome(deps.pool, input.trackId, removed);
        await removeContainer(input.trackId);
        return removed;
      } catch (error) {
        capture.abandon();
        throw error;
      } finally {
        clearInterval(heartbeat);
        clearTimeout(statsTimer);
        stopStats();
      }
    },

    async pauseRunContainer(input: { trackId: string }): Promise<void> {
      const { container, state } = await running(input.trackId);
      if (state.Paused) return;
      await container.pause();
    },

    async unpauseRunContainer(input: { trackId: string }): Promise<void> {
      const { container, state } = await running(input.trackId);
      if (!state.Paused) return;
      await container.unpause();
    },

    /** SIGTERM, then SIGKILL after the grace period (Docker does both; a paused one too). */
    async stopRunContainer(input: { trackId: string; graceSeconds: number }): Promise<void> {
      const found = await owned(input.trackId);
      if (!found) return;
      await found.container.stop({ t: input.graceSeconds }).catch((error: unknown) => {
        if (!isHttpStatus(error, 304)) throw error;
      });
    },

    async killRunContainer(input: { trackId: string }): Promise<void> {
      const found = await owned(input.trackId);
      if (!found) return;
      await found.container.kill().catch((error: unknown) => {
        if (!isHttpStatus(error, 409, 304)) throw error;
      });
    },

    async removeRunContainer(input: { trackId: string }): Promise<void> {
      await removeContainer(input.trackId);
    },
  };

  /**
   * A container is made only for a run whose row is `pulling`: a run already running or paused
   * (an earlier attempt launched it, or an operator reset its workflow) answers its container;
   * one that ended, or never got a slot, gets none. So no reset or retry starts a second one.
   */
  async function alreadyLaunched(trackId: string): Promise<LaunchedContainer | null> {
    const row = await findRunStanding(deps.pool, trackId);
    if (row?.state === 'pulling') return null;
    if ((row?.state === 'running' || row?.state === 'paused') && row.containerId !== null)
      return { containerId: row.containerId, state: row.state, startedAtMs: row.startedAtMs ?? 0 };
    throw ApplicationFailure.nonRetryable(
      `run ${trackId} is ${row?.state ?? 'gone'}: no container is launched for it`,
      'RunNotLaunchable',
    );
  }

  /** What an earlier attempt of followRunContainer answered before it removed the container. */
  async function keptOutcome(trackId: string): Promise<ContainerOutcome | null> {
    return findContainerOutcome(deps.pool, trackId);
  }

  /**
   * The run's log stream from its start, following: by the container's name (one call), by its
   * label for an unnamed one. Null when the container is gone.
   */
  async function attachLogs(
    trackId: string,
  ): Promise<{ container: Docker.Container; logStream: Readable } | null> {
    const follow = async (container: Docker.Container) => ({
      container,
      logStream: (await container.logs({
        follow: true,
        stdout: true,
        stderr: true,
      })) as unknown as Readable,
    });
    try {
      return await follow(docker.getContainer(runContainerName(trackId)));
    } catch (error) {
      if (!isHttpStatus(error, 404)) throw error;
    }
    const found = await owned(trackId);
    return found ? follow(found.container) : null;
  }

  /** The run's container while it is running (or paused); else the control is refused. */
  async function running(trackId: string) {
    const found = await owned(trackId);
    if (!found?.state.Running) throw ApplicationFailure.nonRetryable('not_running', 'NotRunning');
    return found;
  }
}
export type RunDockerActivities = ReturnType<typeof createRunDockerActivities>;

/** Create options of a run's container: named after the run, labelled with its owner. */
function containerSpec(input: RunWorkflowInput, workerId: string): Docker.ContainerCreateOptions {
  return {
    name: runContainerName(input.trackId),
    Image: input.image,
    Cmd: input.command.length > 0 ? input.command : undefined,
    Env: Object.entries(input.env).map(([k, v]) => `${k}=${v}`),
    Labels: {
      [OWNER_LABEL]: runContainerOwner(input.trackId),
      [TRACK_ID_LABEL]: input.trackId,
      [TENANT_LABEL]: input.tenantId,
      [WORKER_LABEL]: workerId,
    },
    HostConfig: {
      Memory: input.memoryLimitMb * BYTES_PER_MB,
      MemorySwap: input.memoryLimitMb * BYTES_PER_MB,
      NanoCpus: Math.round(input.cpuLimit * 1e9),
    },
  };
}
/**
 * Reads Docker's multiplexed log stream (8-byte frame header: stream type, 3 zero bytes,
 * big-endian length) frame by frame, handing each frame to the capture in arrival order, so
 * the interleaving of stdout and stderr is kept (two pass-through streams would lose it).
 */
function demultiplexInto(stream: Readable, capture: LogCapture): Promise<void> {
  let buffered: Buffer = Buffer.alloc(0);
  stream.on('data', (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    let offset = 0;
    while (offset + 8 <= buffered.length) {
      const length = buffered.readUInt32BE(offset + 4);
      if (offset + 8 + length > buffered.length) break;
      const frame = buffered.subarray(offset + 8, offset + 8 + length);
      capture.write(buffered[offset] === 2 ? 'stderr' : 'stdout', frame);
      offset += 8 + length;
    }
    buffered = buffered.subarray(offset);
  });
  return new Promise((resolve, reject) => {
    stream.on('end', () => resolve());
    stream.on('close', () => resolve());
    stream.on('error', reject);
  });
}

/** Streams docker stats and hands each reading to `record`; returns a stopper. */
function followStats(
  container: Docker.Container,
  record: (stats: DockerStats) => Promise<void>,
): () => void {
  let stream: Readable | undefined;
  let stopped = false;
  let buffered = '';
  void container
    .stats({ stream: true })
    .then((s) => {
      stream = s as unknown as Readable;
      if (stopped) stream.destroy();
      stream.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          newline = buffered.indexOf('\n');
          if (line === '') continue;
          try {
            const stats = JSON.parse(line) as DockerStats;
            if (stats.read && !stats.read.startsWith('0001'))
              void record(stats).catch(() => undefined);
          } catch {
            // a torn reading: skip it
          }
        }
      });
      stream.on('error', () => undefined);
    })
    .catch(() => undefined);
  return () => {
    stopped = true;
    stream?.destroy();
  };
}
