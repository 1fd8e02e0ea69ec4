import fs from 'node:fs';
import path from 'node:path';
import type { DatabasePool } from '../../db/pool';
import { machineBusyCpuMs } from './host-cpu';
import { endedChildrenCpuMs, postmasterPid, processCpuMs } from './process-cpu';
import { processTreeCpuMs } from './process-tree-cpu';

/** A pid the local stack recorded (scripts/stack: .data/run/<name>.pid). */
const stackPid = (name: string): number =>
  Number(fs.readFileSync(path.resolve('.data', 'run', `${name}.pid`), 'utf8'));

/**
 * CPU readers (ms so far) for each process of the platform a bench drives: its API and worker
 * (with their children), the Temporal dev server, Postgres (its live and ended backends), the
 * Docker engine (dockerd and what it runs as its children), and the whole machine, whose share
 * beyond these is the containers, their shims, the kernel and the load generator.
 */
export async function stackCpuReaders(
  pool: DatabasePool,
  pids: { api: number; worker: number },
): Promise<Record<string, () => number>> {
  const postmaster = await postmasterPid(pool);
  const temporal = stackPid('temporal');
  const dockerd = stackPid('dockerd');
  return {
    api: () => processTreeCpuMs(pids.api),
    worker: () => processTreeCpuMs(pids.worker),
    temporal: () => processCpuMs(temporal),
    postgres: () => processTreeCpuMs(postmaster) + endedChildrenCpuMs(postmaster),
    docker: () => processTreeCpuMs(dockerd) + endedChildrenCpuMs(dockerd),
    machine: machineBusyCpuMs,
  };
}

/** "api 4740, worker 30, ..." in µs, as cpuPerUnit answers them. */
export const cpuLine = (cpuUs: Record<string, number>): string =>
  Object.entries(cpuUs)
    .map(([name, us]) => `${name} ${us.toFixed(0)}`)
    .join(', ');
