import { temporal } from '@temporalio/proto';
import type { Client } from '@temporalio/client';

/** Histories read at most per figure: a mean of a sample, not a census. */
const HISTORY_SAMPLE = 10;

/**
 * The mean Temporal history of up to HISTORY_SAMPLE of these executions: events and encoded
 * bytes, what a Temporal cluster stores (and bills) per execution. `count` is how many there were.
 */
export async function meanHistory(
  client: Client,
  workflowIds: string[],
): Promise<{ count: number; events: number; bytes: number }> {
  const histories = await Promise.all(
    workflowIds
      .slice(0, HISTORY_SAMPLE)
      .map((workflowId) => client.workflow.getHandle(workflowId).fetchHistory()),
  );
  const mean = (f: (h: temporal.api.history.v1.IHistory) => number) =>
    histories.reduce((sum, h) => sum + f(h), 0) / Math.max(1, histories.length);
  return {
    count: workflowIds.length,
    events: mean((h) => h.events?.length ?? 0),
    bytes: mean((h) => temporal.api.history.v1.History.encode(h).finish().length),
  };
}

/** "12.0 events, 3,456 bytes" */
export const historyLine = (h: { events: number; bytes: number }): string =>
  `${h.events.toFixed(1)} events, ${Math.round(h.bytes).toLocaleString('en')} bytes`;
