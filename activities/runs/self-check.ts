import { Context } from '@temporalio/activity';
import type { DatabasePool } from '../../db/pool';
import { finishSelfCheck, markSelfCheckRunning } from '../../db/runs/self-checks';
import type { Docker } from '../../platform/docker';
import {
  OWNER_LABEL,
  demultiplexLogs,
  findOwnedContainer,
  pullImageOrFail,
} from '../docker/containers';
import type { SelfCheckInput } from '../../contracts/runs/self-check';

export interface SelfCheckContainerResult {
  exitCode: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

/** Output kept per stream; the rest of a chatty container is cut. */
const SELF_CHECK_OUTPUT_MAX_BYTES = 64 * 1024;
const SELF_CHECK_MEMORY_BYTES = 64 * 1024 * 1024;
const SELF_CHECK_NANO_CPUS = 500_000_000;
const HEARTBEAT_INTERVAL_MS = 5_000;

export function createSelfCheckActivities(deps: { pool: DatabasePool }) {
  return {
    async markSelfCheckRunning(input: { checkId: string; workerId: string }): Promise<void> {
      await markSelfCheckRunning(deps.pool, input.checkId, input.workerId);
    },
    async recordSelfCheckOutcome(input: {
      checkId: string;
      result?: SelfCheckContainerResult;
      error?: string;
    }) {
      const result = input.result ?? { exitCode: null, timedOut: false, stdout: '', stderr: '' };
      await finishSelfCheck(deps.pool, input.checkId, { ...result, error: input.error ?? null });
    },
  };
}
export type SelfCheckActivities = ReturnType<typeof createSelfCheckActivities>;

export function createSelfCheckDockerActivities(deps: { docker: Docker }) {
  return {
    /**
     * Pulls the image, runs it under small limits to completion and returns its exit code and
     * output. Idempotent: a retry finds the container by its owner label instead of making a
     * second one, and re-attaches to it.
     */
    async runSelfCheckContainer(input: SelfCheckInput): Promise<SelfCheckContainerResult> {
      const owner = `self-check/${input.checkId}`;
      const heartbeat = setInterval(() => Context.current().heartbeat(), HEARTBEAT_INTERVAL_MS);
      try {
        const existing = await findOwnedContainer(deps.docker, owner);
        const container = existing
          ? deps.docker.getContainer(existing.Id)
          : await createAndStart(deps.docker, owner, input);
        const timedOut = await waitWithTimeout(container, input.timeoutSeconds * 1000);
        const inspected = await container.inspect();
        const logs = demultiplexLogs(
          await container.logs({ stdout: true, stderr: true, follow: false }),
        );
        await container.remove({ force: true });
        return {
          exitCode: inspected.State.ExitCode,
          timedOut,
          stdout: logs.stdout.subarray(-SELF_CHECK_OUTPUT_MAX_BYTES).toString('utf8'),
          stderr: logs.stderr.subarray(-SELF_CHECK_OUTPUT_MAX_BYTES).toString('utf8'),
        };
      } finally {
        clearInterval(heartbeat);
      }
    },
  };
}
export type SelfCheckDockerActivities = ReturnType<typeof createSelfCheckDockerActivities>;

async function createAndStart(docker: Docker, owner: string, input: SelfCheckInput) {
  await pullImageOrFail(docker, input.image);
  const container = await docker.createContainer({
    Image: input.image,
    Cmd: input.command.length > 0 ? input.command : undefined,
    Labels: { [OWNER_LABEL]: owner },
    HostConfig: { Memory: SELF_CHECK_MEMORY_BYTES, NanoCpus: SELF_CHECK_NANO_CPUS },
  });
  await container.start();
  return container;
}

/** Waits for the container to exit; past the timeout it is killed and true is returned. */
async function waitWithTimeout(container: Docker.Container, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<true>((resolve) => {
    timer = setTimeout(() => resolve(true), timeoutMs);
  });
  try {
    const outcome = await Promise.race([container.wait().then(() => false as const), timedOut]);
    if (outcome) {
      await container.kill().catch(() => undefined);
      await container.wait();
    }
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}
