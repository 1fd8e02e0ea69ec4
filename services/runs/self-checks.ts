import { ulid } from '../../db/ids';
import { runsError } from './errors';
import type { PlatformDeps } from '../../platform/deps';
import { taskQueues } from '../../contracts/shared/task-queues';
import {
  deleteSelfCheck,
  findSelfCheck,
  insertSelfCheck,
  type SelfCheckRow,
} from '../../db/runs/self-checks';
import { selfCheckWorkflowId, type SelfCheckInput } from '../../contracts/runs/self-check';
import { executionSearchAttributes } from '../../contracts/shared/search-attributes';
import { selfCheckSummary } from '../../contracts/runs/summaries';

/** Self-checks belong to the operator, not to a customer tenant. */
export const PLATFORM_TENANT = 'platform';

export interface SelfCheckRequest {
  image: string;
  command: string[];
  timeoutSeconds: number;
}

/**
 * Records a self-check and starts its workflow. Only images of the platform's own registry
 * are accepted: this is a diagnostic of the worker hosts, not a way to run arbitrary code.
 */
export async function startSelfCheck(
  deps: PlatformDeps,
  request: SelfCheckRequest,
): Promise<SelfCheckRow> {
  if (!request.image.startsWith(`${deps.config.registryAddress}/`)) {
    throw runsError('image_not_in_local_registry', {
      message: `image must come from ${deps.config.registryAddress}`,
    });
  }
  const checkId = ulid();
  const queues = taskQueues(deps.config.taskQueuePrefix);
  const input: SelfCheckInput = {
    checkId,
    dockerAnyHostQueue: queues.runsDockerAnyHost,
    ...request,
  };
  await insertSelfCheck(deps.pool, input);
  try {
    await deps.temporal.workflow.start('selfCheckWorkflow', {
      workflowId: selfCheckWorkflowId(checkId),
      taskQueue: queues.runs,
      args: [input],
      typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'runs'),
      ...selfCheckSummary(input),
    });
  } catch (error) {
    await deleteSelfCheck(deps.pool, checkId);
    throw runsError('workflow_engine_unavailable', { cause: error });
  }
  return (await findSelfCheck(deps.pool, checkId))!;
}

export async function getSelfCheck(deps: PlatformDeps, checkId: string): Promise<SelfCheckRow> {
  const row = await findSelfCheck(deps.pool, checkId);
  if (!row) throw runsError('not_found', { message: 'self-check not found' });
  return row;
}
