import type { WorkerOptions } from '@temporalio/worker';
import { taskQueues } from '../contracts/shared/task-queues';
import { createHostClaimActivities } from '../activities/runs/host';
import {
  createSelfCheckActivities,
  createSelfCheckDockerActivities,
} from '../activities/runs/self-check';
import { createRunActivities } from '../activities/runs/run';
import { createRunsMeteringIfOn } from '../services/runs/metering';
import { createDagActivities } from '../activities/runs/dag';
import { createDeliveryActivities } from '../activities/shared/delivery';
import { createRunDockerActivities } from '../activities/runs/run-docker';
import { createRetentionActivities } from '../activities/runs/retention';
import { createReconcileActivities } from '../activities/runs/reconcile';
import { createTimerActivities } from '../activities/runs/timers';
import { createScheduleActivities } from '../activities/runs/schedules';
import { createTriggerActivities } from '../activities/runs/triggers';
import type { WorkerDeps } from './deps';
import type { Logger } from '../platform/logger';
import {
  DOCKER_HOST_ALIVE_MS,
  announceDockerHost,
  withdrawDockerHost,
} from '../db/runs/docker-hosts';
import { createLogObjectsIfOn } from '../services/runs/log-objects';
import { removeContainersOfEndedRuns } from '../activities/runs/ended-containers';

/** The any-host worker's activity slots: the containers one host may follow at once. */
const ANY_HOST_ACTIVITY_SLOTS = 2_000;

/** How often a Docker host says it is alive: three beats fit in DOCKER_HOST_ALIVE_MS. */
export const DOCKER_HOST_BEAT_MS = DOCKER_HOST_ALIVE_MS / 3;
/** How often a Docker host looks for containers of runs that ended without it. */
const ENDED_CONTAINERS_SWEEP_MS = 5 * 60_000;

/**
 * This process, as a Docker host of its any-host queue, announces itself now and every
 * DOCKER_HOST_BEAT_MS until stopped (then withdraws): runs take a slot only while some host is
 * alive (db/runs/docker-hosts.ts). A failed beat is logged; the next one tries again. At start
 * and every few minutes it removes its containers of runs that ended without it.
 */
export async function startDockerHostPresence(
  deps: Pick<WorkerDeps, 'config' | 'pool' | 'docker'>,
  logger: Logger,
): Promise<{ stop(): Promise<void> }> {
  const host = {
    anyHostQueue: taskQueues(deps.config.taskQueuePrefix).runsDockerAnyHost,
    workerId: deps.config.workerId,
  };
  await announceDockerHost(deps.pool, host);
  const beat = setInterval(() => {
    announceDockerHost(deps.pool, host).catch((error: unknown) =>
      logger.warn({ err: error }, 'docker host presence not refreshed'),
    );
  }, DOCKER_HOST_BEAT_MS);
  const sweep = () =>
    removeContainersOfEndedRuns({ ...deps, workerId: host.workerId }).then(
      (removed) => {
        if (removed.length > 0)
          logger.info({ trackIds: removed }, 'containers of ended runs removed');
      },
      (error: unknown) => logger.warn({ err: error }, 'containers of ended runs not swept'),
    );
  void sweep();
  const sweeping = setInterval(() => void sweep(), ENDED_CONTAINERS_SWEEP_MS);
  return {
    stop: async () => {
      clearInterval(beat);
      clearInterval(sweeping);
      await withdrawDockerHost(deps.pool, host).catch(() => undefined);
    },
  };
}

/**
 * The runs service's task queues: its workflows with their Postgres activities; the
 * any-host queue where a Docker host claims work; this host's own Docker queue.
 */
export function runsWorkerOptions(deps: WorkerDeps): Partial<WorkerOptions>[] {
  const { config } = deps;
  const queues = taskQueues(config.taskQueuePrefix);
  // One set per process: both Docker queues share its pulls in flight (see PULL_FRESH_MS).
  const logObjects = createLogObjectsIfOn(config.runs.logObjects);
  // One client per process: every activity that reserves or settles run seconds shares it.
  const metering = createRunsMeteringIfOn(config.runs.metering);
  const runDocker = createRunDockerActivities({
    docker: deps.docker,
    pool: deps.pool,
    redis: deps.redis,
    workerId: config.workerId,
    logDir: config.runs.logDir,
    logObjects,
    metering,
  });
  const workflows: Partial<WorkerOptions> = {
    taskQueue: queues.runs,
    workflowBundle: deps.workflowBundle,
    activities: {
      ...createSelfCheckActivities({ pool: deps.pool }),
      ...createRunActivities({ pool: deps.pool, metering }),
      ...createDagActivities({
        pool: deps.pool,
        secretsKey: config.runs.secretsKey,
        logObjects,
        metering,
      }),
      ...createDeliveryActivities({ pool: deps.pool, config }),
      ...createRetentionActivities({
        pool: deps.pool,
        redis: deps.redis,
        logDir: config.runs.logDir,
        logObjects,
      }),
      ...createReconcileActivities({ pool: deps.pool, metering }),
      ...createTimerActivities({ pool: deps.pool }),
      ...createScheduleActivities({ pool: deps.pool, runsQueue: queues.runs }),
      ...createTriggerActivities({ pool: deps.pool, config, metering }),
    },
  };
  if (!config.runs.dockerHost) return [workflows];
  return [
    workflows,
    {
      taskQueue: queues.runsDockerAnyHost,
      // Each run's container holds a slot here from its claim to its end (claimLaunchAndFollowRun):
      // the SDK's default of 100 would cap the containers a host runs; the tenants' concurrency
      // limits bound them instead.
      maxConcurrentActivityTaskExecutions: ANY_HOST_ACTIVITY_SLOTS,
      activities: createHostClaimActivities({
        workerId: config.workerId,
        taskQueuePrefix: config.taskQueuePrefix,
        pool: deps.pool,
        launch: (input) => runDocker.launchRunContainer(input),
        follow: (input) => runDocker.followRunContainer(input),
      }),
    },
    {
      taskQueue: queues.runsDockerHost(config.workerId),
      activities: {
        ...createSelfCheckDockerActivities({ docker: deps.docker }),
        ...runDocker,
      },
    },
  ];
}
