import type Docker from 'dockerode';
import { sql, type DatabasePool } from '../../db/pool';

/**
 * The DAG figure of bench:runs: a fan-out/fan-in of trivial containers (one root, `width` nodes
 * after it, one join: `width + 2` nodes, three levels) through the runs service, against the same
 * containers in the same shape run directly on the Docker engine, in the same run and on the same
 * cores. It prints both makespans, their ratio, and the engine's overhead per node on the
 * critical path: the makespans' difference over its three levels.
 */
/** root → fan-out → join. */
const CRITICAL_PATH_NODES = 3;

export async function dagFigure(options: {
  url: string;
  headers: Record<string, string>;
  pool: DatabasePool;
  docker: Docker;
  image: string;
  width: number;
}): Promise<string> {
  const { url, headers, pool, docker, image, width } = options;
  const direct = await directOnDocker(docker, image, width);
  const middle = Array.from({ length: width }, (_, i) => `n${String(i + 1).padStart(2, '0')}`);
  const trivial = (ref: string) => ({ ref, image, command: ['true'] });
  const response = await fetch(`${url}/api/v1/workflows`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      name: 'bench fan-out/fan-in',
      nodes: [trivial('root'), ...middle.map(trivial), trivial('join')],
      edges: [
        ...middle.map((ref) => ({ from: 'root', to: ref })),
        ...middle.map((ref) => ({ from: ref, to: 'join' })),
      ],
    }),
  });
  if (response.status !== 202)
    throw new Error(`workflow submit answered ${response.status}: ${await response.text()}`);
  const { workflow_id: workflowId } = (await response.json()) as { workflow_id: string };
  const makespan = await waitFinished(pool, workflowId);
  const perLevel = (makespan - direct) / CRITICAL_PATH_NODES;
  return `dag ${width + 2} nodes (fan-out/fan-in) makespan ${makespan.toFixed(2)} s vs ${direct.toFixed(2)} s for the same containers directly on Docker: ratio ${(makespan / direct).toFixed(2)}; engine overhead per node on the critical path ${perLevel.toFixed(3)} s`;
}

/** Seconds from submit to the workflow's end. */
async function waitFinished(pool: DatabasePool, workflowId: string): Promise<number> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const row = (await pool.maybeOne(sql.unsafe`
      SELECT state, extract(epoch FROM finished_at - submitted_at)::float8 AS seconds
      FROM runs.workflows WHERE workflow_id = ${workflowId} AND finished_at IS NOT NULL`)) as {
      state: string;
      seconds: number;
    } | null;
    if (row) {
      if (row.state !== 'succeeded') throw new Error(`bench DAG ended ${row.state}`);
      return row.seconds;
    }
    if (Date.now() > deadline) throw new Error('bench DAG not finished within 300 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The same shape on the engine alone: create, start, wait and remove each container. */
async function directOnDocker(docker: Docker, image: string, width: number): Promise<number> {
  const one = async () => {
    const container = await docker.createContainer({ Image: image, Cmd: ['true'] });
    await container.start();
    await container.wait();
    await container.remove();
  };
  const startedMs = Date.now();
  await one();
  await Promise.all(Array.from({ length: width }, one));
  await one();
  return (Date.now() - startedMs) / 1000;
}
