import type { Readable } from 'node:stream';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { DatabasePool } from '../../db/pool';
import type { Redis } from '../../db/redis';
import { insertUtilizationSample } from '../../db/runs/utilization';
import type { Docker } from '../docker/client';
import { OWNER_LABEL, findOwnedContainer, pullImageOrFail } from '../docker/containers';
import { sampleOf, type DockerStats } from '../docker/stats';
import { LogCapture } from './log-capture';
import { refundUnusedSeconds, wakeWaitingRuns } from './run';
import { transitionRun, type Transition, type TransitionOutcome } from '../../db/runs/runs';
import {
  TRACK_ID_LABEL,
  runContainerOwner,
  type RunWorkflowInput,
} from '../../workflows/runs/definitions';

export const TENANT_LABEL = 'platform.runs.tenant_id';
const HEARTBEAT_INTERVAL_MS = 2_000;
/** docker stats streams one reading per second; we keep one sample per reading. */
const BYTES_PER_MB = 1024 * 1024;

export interface ContainerOutcome {
  exitCode: number | null;
  /** Docker's own error text when the container could not run (e.g. a bad command). */
  error: string | null;
  stdoutBytes: number;
  stderrBytes: number;
  resultSummary: string;
  stdoutFile: string;
  stderrFile: string;
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
 * idempotent: the container is found by its owner label, never made twice.
 */
export function createRunDockerActivities(deps: {
  docker: Docker;
  pool: DatabasePool;
  redis: Redis;
  logDir: string;
}) {
  const { docker } = deps;
  const owned = async (trackId: string) => {
    const info = await findOwnedContainer(docker, runContainerOwner(trackId));
    return info ? docker.getContainer(info.Id) : null;
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

  const startContainer = async (input: RunWorkflowInput): Promise<{ containerId: string }> => {
    let container = await owned(input.trackId);
    if (!container) {
      try {
        container = await docker.createContainer({
          Image: input.image,
          Cmd: input.command.length > 0 ? input.command : undefined,
          Env: Object.entries(input.env).map(([k, v]) => `${k}=${v}`),
          Labels: {
            [OWNER_LABEL]: runContainerOwner(input.trackId),
            [TRACK_ID_LABEL]: input.trackId,
            [TENANT_LABEL]: input.tenantId,
          },
          HostConfig: {
            Memory: input.memoryLimitMb * BYTES_PER_MB,
            MemorySwap: input.memoryLimitMb * BYTES_PER_MB,
            NanoCpus: Math.round(input.cpuLimit * 1e9),
          },
        });
      } catch (error) {
        if (isHttpStatus(error, 409)) container = await owned(input.trackId);
        else if (isHttpStatus(error, 400, 404))
          throw ApplicationFailure.nonRetryable((error as Error).message, 'StartFailed');
        else throw error;
      }
    }
    const state = (await container!.inspect()).State;
    if (state.Status === 'created') {
      try {
        await container!.start();
      } catch (error) {
        if (!isHttpStatus(error, 304)) {
          throw ApplicationFailure.nonRetryable(
            `cannot start container: ${(error as Error).message}`,
            'StartFailed',
          );
        }
      }
    }
    return { containerId: container!.id };
  };
  const removeContainer = async (trackId: string): Promise<void> => {
    const container = await owned(trackId);
    if (!container) return;
    await container.remove({ force: true }).catch((error: unknown) => {
      if (!isHttpStatus(error, 404, 409)) throw error;
    });
  };

  return {
    async pullRunImage(input: { image: string }): Promise<void> {
      await pullImageOrFail(docker, input.image);
    },

    /** Creates and starts the run's container, or finds the one an earlier attempt made. */
    startRunContainer: startContainer,

    /**
     * pulling → running in one activity: pull (shared, see PULL_FRESH_MS), create and start
     * the container, then the transition with its container id and started_at. Idempotent:
     * the container is found by label and the transition keyed by the workflow's event id.
     * A pull or start failure is thrown before the transition (the run is still pulling).
     */
    async launchRunContainer(input: {
      run: RunWorkflowInput;
      transition: Omit<Transition, 'fields'>;
    }): Promise<{ containerId: string }> {
      await pullShared(input.run.image);
      const { containerId } = await startContainer(input.run);
      await transitionRun(deps.pool, {
        ...input.transition,
        fields: { container_id: containerId, started_at: 'now' },
      });
      return { containerId };
    },

    /**
     * The end of a run in one activity: its terminal transition, the container removed, the
     * slot's waiting runs woken and a metered key's unused seconds refunded. Each step is
     * idempotent, so a retry repeats only what did not happen.
     */
    async finishRun(input: {
      transition: Transition;
      tenantId: string;
      maxConcurrent: number | null;
      refundUsedSeconds: number | null;
    }): Promise<TransitionOutcome> {
      const outcome = await transitionRun(deps.pool, input.transition);
      await removeContainer(input.transition.trackId);
      if (input.refundUsedSeconds !== null)
        await refundUnusedSeconds(deps.pool, {
          trackId: input.transition.trackId,
          usedSeconds: input.refundUsedSeconds,
        });
      await wakeWaitingRuns(deps.pool, {
        tenantId: input.tenantId,
        maxConcurrent: input.maxConcurrent,
      }).catch(() => 0);
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
    }): Promise<ContainerOutcome> {
      const container = await owned(input.trackId);
      if (!container)
        throw ApplicationFailure.nonRetryable('the run container is gone', 'ContainerLost');
      const capture = new LogCapture(deps.redis, deps.logDir, input.tenantId, input.trackId);
      const heartbeat = setInterval(() => Context.current().heartbeat(), HEARTBEAT_INTERVAL_MS);
      const stopStats = followStats(container, (stats) =>
        insertUtilizationSample(deps.pool, input.trackId, input.memoryLimitMb, sampleOf(stats)),
      );
      try {
        await capture.reset();
        const logStream = (await container.logs({
          follow: true,
          stdout: true,
          stderr: true,
        })) as unknown as Readable;
        await demultiplexInto(logStream, capture);
        const waited = (await container.wait()) as { StatusCode: number };
        const inspected = await container.inspect();
        const totals = await capture.close();
        return {
          exitCode: waited.StatusCode ?? inspected.State.ExitCode,
          error: inspected.State.Error || null,
          ...totals,
          stdoutFile: capture.files.stdout,
          stderrFile: capture.files.stderr,
        };
      } catch (error) {
        capture.abandon();
        throw error;
      } finally {
        clearInterval(heartbeat);
        stopStats();
      }
    },

    async pauseRunContainer(input: { trackId: string }): Promise<void> {
      const container = await running(input.trackId);
      const state = (await container.inspect()).State;
      if (state.Paused) return;
      await container.pause();
    },

    async unpauseRunContainer(input: { trackId: string }): Promise<void> {
      const container = await running(input.trackId);
      const state = (await container.inspect()).State;
      if (!state.Paused) return;
      await container.unpause();
    },

    /** SIGTERM, then SIGKILL after the grace period (Docker does both; a paused one too). */
    async stopRunContainer(input: { trackId: string; graceSeconds: number }): Promise<void> {
      const container = await owned(input.trackId);
      if (!container) return;
      await container.stop({ t: input.graceSeconds }).catch((error: unknown) => {
        if (!isHttpStatus(error, 304)) throw error;
      });
    },

    async killRunContainer(input: { trackId: string }): Promise<void> {
      const container = await owned(input.trackId);
      if (!container) return;
      await container.kill().catch((error: unknown) => {
        if (!isHttpStatus(error, 409, 304)) throw error;
      });
    },

    async removeRunContainer(input: { trackId: string }): Promise<void> {
      await removeContainer(input.trackId);
    },
  };

  /** The run's container while it is running (or paused); else the control is refused. */
  async function running(trackId: string) {
    const container = await owned(trackId);
    const state = container ? (await container.inspect()).State : null;
    if (!container || !state?.Running)
      throw ApplicationFailure.nonRetryable('not_running', 'NotRunning');
    return container;
  }
}
export type RunDockerActivities = ReturnType<typeof createRunDockerActivities>;

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
