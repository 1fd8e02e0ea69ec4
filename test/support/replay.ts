import { Worker } from '@temporalio/worker';
import type { PayloadKey } from '../../platform/payload-codec';
import { payloadDataConverter } from '../../platform/payload-codec';
import { bundleWorkflows } from '../../worker/workers';

/**
 * Replays histories against today's workflow code, their payloads decoded with `keys`, and
 * answers each one that fails (`<workflowId>: <message>`): empty when every one replays.
 */
export async function replayFailures(
  histories: { workflowId: string; history: unknown }[],
  keys: PayloadKey[],
): Promise<string[]> {
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: await bundleWorkflows(), dataConverter: payloadDataConverter(keys) },
    histories as Parameters<typeof Worker.runReplayHistories>[1],
  ))
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  return failures;
}
