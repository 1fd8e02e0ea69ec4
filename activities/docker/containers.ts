import type Docker from 'dockerode';
import { ApplicationFailure } from '@temporalio/activity';

/** Label that ties a container to the platform resource it serves, e.g. "self-check/01J…". */
export const OWNER_LABEL = 'platform.owner';

/**
 * Pulls an image for an activity. A pull that fails (no such image or tag, registry refusing)
 * will not succeed on retry, so it ends the activity as a non-retryable `ImageNotFound`.
 */
export async function pullImageOrFail(docker: Docker, image: string): Promise<void> {
  try {
    await pullImage(docker, image);
  } catch (error) {
    throw ApplicationFailure.nonRetryable(
      `cannot pull ${image}: ${(error as Error).message}`,
      'ImageNotFound',
    );
  }
}

/** Pulls an image from its registry (a real pull each time; the layers are cached). */
export async function pullImage(docker: Docker, image: string): Promise<void> {
  const stream = await docker.pull(image);
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(stream, (error: Error | null, events: { error?: string }[]) => {
      const failed = events?.find((e) => e.error);
      if (error) reject(error);
      else if (failed) reject(new Error(failed.error));
      else resolve();
    });
  });
}

/** The container already made for an owner, if any: what makes create idempotent on retry. */
export async function findOwnedContainer(
  docker: Docker,
  owner: string,
): Promise<Docker.ContainerInfo | undefined> {
  const found = await docker.listContainers({
    all: true,
    filters: { label: [`${OWNER_LABEL}=${owner}`] },
  });
  return found[0];
}

/**
 * Splits Docker's multiplexed log stream (8-byte frame headers: stream type, 3 zero bytes,
 * big-endian length) into stdout and stderr.
 */
export function demultiplexLogs(buffer: Buffer): { stdout: Buffer; stderr: Buffer } {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buffer.length) {
    const streamType = buffer[offset];
    const length = buffer.readUInt32BE(offset + 4);
    const frame = buffer.subarray(offset + 8, offset + 8 + length);
    if (streamType === 2) stderr.push(frame);
    else stdout.push(frame);
    offset += 8 + length;
  }
  return { stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
}
