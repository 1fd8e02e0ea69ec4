import type Docker from 'dockerode';
import type { DatabasePool } from '../../db/pool';
import { activeTrackIds } from '../../db/runs/reconcile';
import { TRACK_ID_LABEL } from '../../contracts/runs/run';
import { WORKER_LABEL } from './run-docker';

/**
 * Removes this host's run containers whose runs are no longer active. A run that ended without
 * its host (taken for lost while the host was down or cut off, or failed by the reconciler)
 * leaves its container there; the host's worker removes it once it is back. Only containers
 * this worker made (by WORKER_ID) are judged, so hosts sharing one engine never race.
 */
export async function removeContainersOfEndedRuns(deps: {
  docker: Docker;
  pool: DatabasePool;
  workerId: string;
}): Promise<string[]> {
  const containers = await deps.docker.listContainers({
    all: true,
    filters: { label: [`${WORKER_LABEL}=${deps.workerId}`] },
  });
  const byTrackId = new Map(containers.map((c) => [c.Labels[TRACK_ID_LABEL] ?? '', c.Id]));
  byTrackId.delete('');
  if (byTrackId.size === 0) return [];
  const active = await activeTrackIds(deps.pool, [...byTrackId.keys()]);
  const ended = [...byTrackId.keys()].filter((trackId) => !active.has(trackId));
  await Promise.all(
    ended.map((trackId) =>
      deps.docker
        .getContainer(byTrackId.get(trackId)!)
        .remove({ force: true })
        .catch((error: { statusCode?: number }) => {
          if (error.statusCode !== 404 && error.statusCode !== 409) throw error;
        }),
    ),
  );
  return ended;
}
