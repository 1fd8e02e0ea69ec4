import type Docker from 'dockerode';

/**
 * What a trivial run asks of the Docker engine, asked of it directly: create, start, wait for
 * the end, remove. The baseline of the runs bench's figures, on the same engine and cores.
 */
export const containerOnce =
  (docker: Docker, image: string, phases?: DirectPhases) => async (): Promise<void> => {
    const startedMs = Date.now();
    const container = await docker.createContainer({ Image: image, Cmd: ['true'] });
    await container.start();
    const runningMs = Date.now();
    await container.wait();
    await container.remove();
    phases?.startMs.push(runningMs - startedMs);
    phases?.endMs.push(Date.now() - runningMs);
  };

/** How long each direct container took to start (create, start) and to end (wait, remove). */
export interface DirectPhases {
  startMs: number[];
  endMs: number[];
}

/** Containers per second the engine completes on its own, `concurrency` at a time. */
export async function directRate(
  docker: Docker,
  image: string,
  count: number,
  concurrency: number,
): Promise<number> {
  const one = containerOnce(docker, image);
  let next = 0;
  const lane = async () => {
    while (next < count) {
      next++;
      await one();
    }
  };
  const startedMs = Date.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return count / ((Date.now() - startedMs) / 1000);
}
