/**
 * The runs service's webhook event catalogue (the spec's Events section): the lifecycle events of
 * runs, workflows and nodes, their aliases and wildcards, and the tenant notices. One place for
 * what a subscription may name and what it matches.
 */
export const RUN_EVENTS = [
  'run.scheduled',
  'run.queued',
  'run.pulling',
  'run.running',
  'run.paused',
  'run.resumed',
  'run.stopping',
  'run.exited',
  'run.failed',
  'run.timeout',
  'run.killed',
] as const;
export const WORKFLOW_EVENTS = [
  'workflow.running',
  'workflow.paused',
  'workflow.resumed',
  'workflow.succeeded',
  'workflow.failed',
  'workflow.cancelled',
] as const;
export const NODE_EVENTS = [
  'node.running',
  'node.retrying',
  'node.waiting_approval',
  'node.succeeded',
  'node.failed',
  'node.skipped',
  'node.cancelled',
] as const;
const LIFECYCLE_EVENTS: readonly string[] = [...RUN_EVENTS, ...WORKFLOW_EVENTS, ...NODE_EVENTS];

/** Notices of no run or workflow; matched only by their own name (no wildcard covers them). */
/** Notices about deliveries themselves: a delivery of one that dies raises no further notice. */
export const DELIVERY_HEALTH_NOTICES: readonly string[] = [
  'webhook.endpoint_degraded',
  'tenant.delivery_dead',
];
export const NOTICE_EVENTS = [
  'webhook.endpoint_degraded',
  'tenant.delivery_dead',
  'timer.fired',
  'schedule.fired',
] as const;
/** Sent only by POST /webhooks/{id}/test, to any endpoint. */
export const TEST_EVENT = 'webhook.test';

export const TERMINAL_RUN_EVENTS = ['run.exited', 'run.failed', 'run.timeout', 'run.killed'];
const ALIASES: Record<string, readonly string[]> = {
  'run.terminal': TERMINAL_RUN_EVENTS,
  'workflow.terminal': ['workflow.succeeded', 'workflow.failed', 'workflow.cancelled'],
  'run.*': RUN_EVENTS,
  'workflow.*': WORKFLOW_EVENTS,
  'node.*': NODE_EVENTS,
  '*': LIFECYCLE_EVENTS,
};

/** Every entry a subscription's `events` may hold: literals, aliases, wildcards, notices. */
export const SUBSCRIBABLE: readonly string[] = [
  ...LIFECYCLE_EVENTS,
  ...NOTICE_EVENTS,
  ...Object.keys(ALIASES),
];

export const isSubscribable = (entry: string): boolean => SUBSCRIBABLE.includes(entry);

/** Whether a subscription's entries (a union) match a concrete event type. */
export function matches(entries: readonly string[], eventType: string): boolean {
  return entries.some((entry) => entry === eventType || ALIASES[entry]?.includes(eventType));
}

/**
 * The catalogue's event of a workflow's or node's state change (its events feed row), or null
 * for a change the catalogue does not name (a workflow's or a reset node's `pending`).
 */
export function workflowEventType(
  kind: 'workflow' | 'node',
  from: string | null,
  to: string,
): string | null {
  if (to === 'pending') return null;
  if (kind === 'workflow' && to === 'running' && from === 'paused') return 'workflow.resumed';
  return `${kind}.${to}`;
}
