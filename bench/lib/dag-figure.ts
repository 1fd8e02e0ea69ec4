import type Docker from 'dockerode';
import type { Client } from '@temporalio/client';
import { sql, type DatabasePool } from '../../db/pool';
import { dagWorkflowId } from '../../contracts/runs/dag';
import { runWorkflowId } from '../../contracts/runs/run';
import { containerOnce, type DirectPhases } from './docker-direct';
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
  const directPhases: DirectPhases = { startMs: [], endMs: [] };
  await shape.direct(containerOnce(docker, image, directPhases));
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
  const figure = `dag ${shape.name.padEnd(28)} makespan ${makespan.toFixed(2)} s vs ${direct.toFixed(2)} s for the same containers directly on Docker: ratio ${(makespan / direct).toFixed(2)}; engine overhead per node on the critical path ${perNode.toFixed(3)} s; Temporal history per node ${historyLine(history)}`;
  if (shape.criticalPath !== shape.refs.length) return figure;
  return `${figure}\n${await nodePhases(pool, workflowId, directPhases)}`;
}

/**
 * Where a chain node's time goes, from its run's events (one clock: Postgres'), as means over
 * the nodes, beside Docker's own start (create, start) and end (wait, remove) in the same run.
 */
async function nodePhases(
  pool: DatabasePool,
  workflowId: string,
  direct: DirectPhases,
): Promise<string> {
  const phases = (await pool.one(sql.unsafe`
    WITH node AS (
      SELECT r.track_id,
        min(e.ts) FILTER (WHERE e.to_state = 'scheduled') AS scheduled,
        min(e.ts) FILTER (WHERE e.to_state = 'queued') AS queued,
        min(e.ts) FILTER (WHERE e.to_state = 'pulling') AS pulling,
        min(e.ts) FILTER (WHERE e.to_state = 'running') AS running,
        max(e.ts) AS ended
      FROM runs.runs r JOIN runs.run_events e USING (track_id)
      WHERE r.workflow_id = ${workflowId} GROUP BY r.track_id),
    hop AS (SELECT *, scheduled - lag(ended) OVER (ORDER BY scheduled) AS since_previous FROM node)
    SELECT
      avg(extract(epoch FROM since_previous)) * 1000 AS "hopMs",
      avg(extract(epoch FROM queued - scheduled)) * 1000 AS "slotMs",
      avg(extract(epoch FROM pulling - queued)) * 1000 AS "claimMs",
      avg(extract(epoch FROM running - pulling)) * 1000 AS "launchMs",
      avg(extract(epoch FROM ended - running)) * 1000 AS "endMs"
    FROM hop`)) as Record<'hopMs' | 'slotMs' | 'claimMs' | 'launchMs' | 'endMs', number>;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const ms = (x: number) => `${Math.round(x)} ms`;
  return `  per node (means): previous end → run stored ${ms(phases.hopMs)}; → slot ${ms(phases.slotMs)}; → host claimed ${ms(phases.claimMs)}; → running ${ms(phases.launchMs)} (Docker's create + start alone: ${ms(mean(direct.startMs))}); → ended and recorded ${ms(phases.endMs)} (Docker's wait + remove alone: ${ms(mean(direct.endMs))})`;
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
