import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { HostClaimActivities } from '../../activities/runs/host';
import type {
  SelfCheckActivities,
  SelfCheckDockerActivities,
  SelfCheckContainerResult,
} from '../../activities/runs/self-check';
import type { SelfCheckInput } from '../../contracts/runs/self-check';
import { claimHostProfile, dockerCallProfile, postgresProfile } from '../shared/activity-profiles';

export interface SelfCheckOutcome extends SelfCheckContainerResult {
  workerId: string;
}

const db = proxyActivities<SelfCheckActivities>(postgresProfile);

/**
 * One path through every layer: claim a Docker host, record the check as running, run the
 * container on that host, record its exit code and output.
 */
export async function selfCheckWorkflow(input: SelfCheckInput): Promise<SelfCheckOutcome> {
  const { claimDockerHost } = proxyActivities<HostClaimActivities>({
    ...claimHostProfile,
    taskQueue: input.dockerAnyHostQueue,
  });
  const host = await claimDockerHost();
  await db.markSelfCheckRunning({ checkId: input.checkId, workerId: host.workerId });

  const docker = proxyActivities<SelfCheckDockerActivities>({
    ...dockerCallProfile,
    startToCloseTimeout: `${input.timeoutSeconds + 60} seconds`,
    taskQueue: host.taskQueue,
  });
  try {
    const result = await docker.runSelfCheckContainer(input);
    await db.recordSelfCheckOutcome({ checkId: input.checkId, result });
    return { ...result, workerId: host.workerId };
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    const reason = error.cause instanceof ApplicationFailure ? error.cause.message : error.message;
    await db.recordSelfCheckOutcome({ checkId: input.checkId, error: reason });
    throw ApplicationFailure.nonRetryable(`self-check failed: ${reason}`, 'SelfCheckFailed');
  }
}
