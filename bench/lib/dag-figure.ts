import type Docker from 'dockerode';
import type { Client } from '@temporalio/client';
import { sql, type DatabasePool } from '../../db/pool';
import { dagWorkflowId } from '../../workflows/runs/dag-definitions';
import { runWorkflowId } from '../../workflows/runs/definitions';
import { containerOnce } from './docker-direct';
import { historyLine, meanHistory } from './histories';

/**
 * The DAG figures of bench:runs, each through the runs service against the same containers in
 * the same shape run directly on the Docker engine, in the same run and on the same cores:
 *  - fan-out/fan-in: one root, `width` nodes after it, one join (three levels);
 *  - chain: `length` nodes one after another.
 * Each prints both makespans, their ratio, the engine's overhead per node on the critical path
 * (the makespans' difference over its nodes), and the Temporal history per node (the DAG's own
 * execution and its node runs', over the nodes).
 */
export interface DagShape {
  name: string;
  refs: string[];
  edges: { from: string; to: string }[];
  criticalPath: number;
  /** The same containers in the same shape on the engine alone. */
  direct: (one: () => Promise<void>) => Promise<void>;
}

const ref = (i: number) => `n${String(i + 1).padStart(2, '0')}`;

export function fanOutFanIn(width: number): DagShape {
  const middle = Array.from({ length: width }, (_, i) => ref(i));
  return {
    name: `${width + 2} nodes, fan-out/fan-in`,
    refs: ['root', ...middle, 'join'],
    edges: [
      ...middle.map((to) => ({ from: 'root', to })),
      ...middle.map((from) => ({ from, to: 'join' })),
    ],
    criticalPath: 3,
    direct: async (one) => {
      await one();
      await Promise.all(middle.map(() => one()));
      await one();
    },
  };
}

export function chain(length: number): DagShape {
  const refs = Array.from({ length }, (_, i) => ref(i));
  return {
    name: `${length} nodes, chain`,
    refs,
    edges: refs.slice(1).map((to, i) => ({ from: refs[i]!, to })),
    criticalPath: length,
    direct: async (one) => {
      for (const _ of refs) await one();
    },
  };
}

export async function dagFigure(
  options: {
    url: string;
    headers: Record<string, string>;
    pool: DatabasePool;
    docker: Docker;
    temporal: Client;
    image: string;
  },
  shape: DagShape,
): Promise<string> {
  const { url, headers, pool, docker, image } = options;
  const startedMs = Date.now();
  await shape.direct(containerOnce(docker, image));
  const direct = (Date.now() - startedMs) / 1000;
  const response = await fetch(`${url}/api/v1/workflows`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      name: `bench ${shape.name}`,
      nodes: shape.refs.map((r) => ({ ref: r, image, command: ['true'] })),
      edges: shape.edges,
    }),
  });
  if (response.status !== 202)
    throw new Error(`workflow submit answered ${response.status}: ${await response.text()}`);
  const { workflow_id: workflowId } = (await response.json()) as { workflow_id: string };
  const makespan = await waitFinished(pool, workflowId);
  const perNode = (makespan - direct) / shape.criticalPath;
  const history = await historyPerNode(options.temporal, pool, workflowId, shape.refs.length);
  return `dag ${shape.name.padEnd(28)} makespan ${makespan.toFixed(2)} s vs ${direct.toFixed(2)} s for the same containers directly on Docker: ratio ${(makespan / direct).toFixed(2)}; engine overhead per node on the critical path ${perNode.toFixed(3)} s; Temporal history per node ${historyLine(history)}`;
}

/** The DAG's execution and its node runs' histories, summed, over its nodes. */
async function historyPerNode(
  client: Client,
  pool: DatabasePool,
  workflowId: string,
  nodes: number,
) {
  const runs = (await pool.anyFirst(sql.unsafe`
    SELECT track_id FROM runs.runs WHERE workflow_id = ${workflowId}`)) as string[];
  const dag = await meanHistory(client, [dagWorkflowId(workflowId)]);
  const node = await meanHistory(client, runs.map(runWorkflowId));
  return {
    events: (dag.events + node.events * runs.length) / nodes,
    bytes: (dag.bytes + node.bytes * runs.length) / nodes,
  };
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
