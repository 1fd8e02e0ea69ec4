import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ApplicationFailure,
  ParentClosePolicy,
  proxyActivities,
  proxyLocalActivities,
  startChild,
} from '@temporalio/workflow';
import type { TriggerActivities, TriggerFireResult } from '../../activities/runs/triggers';
import { localPostgresProfile, postgresProfile } from '../shared/activity-profiles';
import { DAG_STATE, executionSearchAttributes } from '../../contracts/shared/search-attributes';
import { dagSummary } from '../../contracts/runs/summaries';
import { dagWorkflow } from './dag';
import { dagWorkflowId } from '../../contracts/runs/dag';
import { scheduledOccurrence } from './schedule-fire';
import type { TriggerFireWorkflowInput } from '../../contracts/runs/trigger-fire';

/** The failure type a fire ends with when its launch was refused (the trigger is disabled). */
export const TRIGGER_DISABLED_FAILURE = 'TriggerDisabled';

const db = proxyLocalActivities<TriggerActivities>(localPostgresProfile);
const temporal = proxyActivities<TriggerActivities>(postgresProfile);

/**
 * One fire of a template trigger, started by its Temporal Schedule. fireTrigger records the
 * occurrence and launches the template as a DAG workflow (once per occurrence, whatever retries
 * or duplicated actions), which this execution starts as its child dag/<workflow_id>, abandoned
 * to run on its own: the Web UI links each occurrence to the workflow it produced. A launch the
 * service refuses disables the trigger; this execution then pauses the Temporal Schedule (its
 * pause-on-failure policy does not watch ALLOW_ALL starts) and fails, non-retryable.
 */
export async function triggerFireWorkflow(
  input: TriggerFireWorkflowInput,
): Promise<TriggerFireResult> {
  const fired = await db.fireTrigger({ ...input, occurrence: scheduledOccurrence() });
  if (fired.outcome === 'launched' && fired.start) {
    const dag = fired.start;
    try {
      await startChild(dagWorkflow, {
        workflowId: dagWorkflowId(dag.workflowId),
        taskQueue: fired.taskQueue,
        args: [dag],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [
          ...executionSearchAttributes(input.tenantId, 'runs'),
          { key: DAG_STATE, value: 'pending' },
        ],
        ...dagSummary(dag),
      });
    } catch (error) {
      // The submit's outbox sweeper started it first: the same execution.
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    await db.markDagStarted(dag.workflowId);
  }
  if (fired.outcome === 'failed') {
    await temporal.pauseTriggerSchedule({
      triggerId: input.triggerId,
      note: `disabled: ${fired.reason} (${fired.fire.error})`,
    });
    throw ApplicationFailure.nonRetryable(
      `trigger disabled (${fired.reason}): ${fired.fire.error}`,
      TRIGGER_DISABLED_FAILURE,
      fired,
    );
  }
  return fired;
}
