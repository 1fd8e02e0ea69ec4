import type { PlatformDeps } from '../../../platform/deps';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { listenForNotifications } from '../../../platform/pg-notifications';
import {
  claimUnpublished,
  insertDeliveries,
  markPublished,
  payloadLimits,
  runSnapshots,
  subscriptionsFor,
  workflowSnapshots,
  type NewDelivery,
  type RunSnapshot,
  type Subscription,
  type UnpublishedEvent,
  type WorkflowSnapshot,
} from '../../../db/runs/deliveries';
import { fitted, runEventData, type Envelope } from './envelopes';
import { matches, workflowEventType } from './catalogue';
import type { DeliveryStarter } from './starter';

/**
 * How often each API process looks for committed events to publish even when no notification
 * came (an event of a tenant with a webhook notifies at its commit: LISTEN runs_webhook_events).
 */
export const PUBLISH_INTERVAL_MS = 1_000;
const EVENTS_CHANNEL = 'runs_webhook_events';
/** Events taken per outbox and pass. */
const PUBLISH_BATCH = 500;

/**
 * The publisher: turns committed events (run_events, workflow_events, webhook_notices with
 * published_at NULL) into deliveries, never request code: woken by the notification of each
 * commit that may make a delivery (its tenant has a webhook), and every PUBLISH_INTERVAL_MS
 * besides, which publishes every other event in bulk. One transaction per pass claims the
 * events (SKIP LOCKED: API processes share the work), inserts one delivery per matching
 * subscription (held for a disabled endpoint) and marks them published; the pending
 * deliveries' workflows are then started through the delivery outbox.
 */
export function createEventPublisher(deps: PlatformDeps, starter: DeliveryStarter) {
  const queue = taskQueues(deps.config.taskQueuePrefix).runs;
  let timer: NodeJS.Timeout | undefined;
  let listening: { close(): Promise<void> } | undefined;
  let running: Promise<void> | null = null;
  /** A notification came during a pass: one more pass after it. */
  let again = false;
  /** One transaction; true when an outbox had more than a batch (another pass is due). */
  const pass = async (): Promise<boolean> => {
    const started = await deps.pool.transaction(async (tx) => {
      const events = await claimUnpublished(tx, PUBLISH_BATCH, queue);
      if (events.length === 0) return { full: false, pending: [] };
      const deliveries = await deliveriesOf(tx, events, queue);
      const pending = await insertDeliveries(tx, deliveries);
      await markPublished(tx, events);
      const full = (['run', 'workflow', 'notice'] as const).some(
        (source) => events.filter((e) => e.source === source).length === PUBLISH_BATCH,
      );
      return { full, pending };
    });
    for (const delivery of started.pending) starter.dispatch(delivery);
    return started.full;
  };
  const publishAll = async () => {
    try {
      while (await pass());
    } catch (error) {
      deps.logger.warn({ err: (error as Error).message }, 'webhook events not published yet');
    }
  };
  const tick = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = publishAll().finally(() => {
      running = null;
      if (again) {
        again = false;
        void tick();
      }
    });
    return running;
  };
  return {
    /** One pass over whatever is committed (tests call it rather than wait for a tick). */
    publish: tick,
    start(): void {
      timer = setInterval(() => void tick(), PUBLISH_INTERVAL_MS);
      timer.unref();
      listening = listenForNotifications({
        databaseUrl: deps.config.databaseUrl,
        channel: EVENTS_CHANNEL,
        applicationName: 'runs-publisher',
        onNotify: () => void tick(),
        logger: deps.logger,
      });
    },
    async stop(): Promise<void> {
      clearInterval(timer);
      await listening?.close();
      await running;
    },
  };
}
export type EventPublisher = ReturnType<typeof createEventPublisher>;

type Tx = Parameters<Parameters<PlatformDeps['pool']['transaction']>[0]>[0];

/** The deliveries a batch of events makes: each event against every subscription it matches. */
async function deliveriesOf(
  tx: Tx,
  events: UnpublishedEvent[],
  queue: string,
): Promise<NewDelivery[]> {
  const tenants = [...new Set(events.map((e) => e.tenant_id))];
  const trackIds = [...new Set(events.flatMap((e) => (e.track_id ? [e.track_id] : [])))];
  const workflowIds = [...new Set(events.flatMap((e) => (e.workflow_id ? [e.workflow_id] : [])))];
  const inlineOwners = [...new Set(events.flatMap(inlineOwnersOf))];
  const subscriptions = await subscriptionsFor(tx, tenants, inlineOwners);
  if (subscriptions.length === 0) return [];
  const context: Context = {
    subscriptions,
    limits: await payloadLimits(tx, tenants),
    runs: await runSnapshots(tx, trackIds),
    workflows: await workflowSnapshots(tx, workflowIds),
  };
  return events.flatMap((event) =>
    deliveriesOfEvent(event, context).map((d) => ({ ...d, workflow_task_queue: queue })),
  );
}

interface Context {
  subscriptions: readonly Subscription[];
  limits: Map<string, number>;
  runs: Map<string, RunSnapshot>;
  workflows: Map<string, WorkflowSnapshot>;
}

/**
 * The resources whose inline webhook an event reaches: its run and the workflow that run or
 * event belongs to; for a timer's or a schedule's notice (timer.fired, schedule.fired), that
 * timer or schedule.
 */
function inlineOwnersOf(event: UnpublishedEvent): string[] {
  const owned =
    event.source === 'notice' &&
    (event.resource_type === 'timer' || event.resource_type === 'schedule');
  return [event.track_id, event.workflow_id, owned ? event.resource_id : null].filter(
    (id): id is string => id !== null,
  );
}

function deliveriesOfEvent(
  event: UnpublishedEvent,
  context: Context,
): Omit<NewDelivery, 'workflow_task_queue'>[] {
  const built = envelopeOf(event, context);
  if (built === null) return [];
  // A tenant's endpoints, and the inline webhook of the event's run, workflow, timer or schedule.
  const owners = inlineOwnersOf(event);
  const scoped = (s: Subscription) =>
    s.tenant_id === event.tenant_id && (s.inline_for === null || owners.includes(s.inline_for));
  const limit = context.limits.get(event.tenant_id) ?? Infinity;
  const envelope = fitted(built, limit);
  return context.subscriptions
    .filter((s) => scoped(s) && matches(s.events, envelope.event_type))
    .map((s) => ({
      tenant_id: event.tenant_id,
      endpoint_id: s.endpoint_id,
      event_id: event.event_id,
      event_type: envelope.event_type,
      track_id: event.track_id,
      workflow_id: event.workflow_id,
      envelope,
      truncated: envelope.truncated,
      held: !s.active,
    }));
}

/** The event's envelope (without `delivery`), or null for a change the catalogue does not name. */
function envelopeOf(event: UnpublishedEvent, context: Context): Envelope | null {
  const base = (eventType: string, resource: { type: string; id: string }) => ({
    event_id: event.event_id,
    event_type: eventType,
    occurred_at: event.occurred_at,
    tenant_id: event.tenant_id,
    resource,
    truncated: false,
  });
  if (event.source === 'notice')
    return {
      ...base(event.event_type!, { type: event.resource_type!, id: event.resource_id! }),
      data: event.data ?? {},
    };
  if (event.source === 'run') {
    const run = context.runs.get(event.track_id!);
    if (!run) return null;
    return {
      ...base(event.event_type!, { type: 'run', id: event.track_id! }),
      data: runEventData(event.event_type!, event.to_state!, run),
    };
  }
  const eventType = workflowEventType(event.kind!, event.from_state, event.to_state!);
  const workflow = context.workflows.get(event.workflow_id!);
  if (eventType === null || !workflow) return null;
  return {
    ...base(eventType, { type: 'workflow', id: event.workflow_id! }),
    data:
      event.kind === 'workflow'
        ? workflowData(workflow, event.to_state!)
        : nodeData(workflow, event.node_ref!, event.to_state!),
  };
}

function workflowData(w: WorkflowSnapshot, state: string): Record<string, unknown> {
  return {
    workflow_id: w.workflow_id,
    state,
    name: w.name,
    failure_policy: w.failure_policy,
    tags: w.tags,
    nodes: w.nodes.map(({ ref, type, state: nodeState, attempt, exit_code }) => ({
      ref,
      type,
      state: nodeState,
      attempt,
      exit_code,
    })),
    failed_nodes: w.nodes.filter((n) => n.state === 'failed').map((n) => n.ref),
  };
}

function nodeData(w: WorkflowSnapshot, ref: string, state: string): Record<string, unknown> {
  const node = w.nodes.find((n) => n.ref === ref);
  return {
    workflow_id: w.workflow_id,
    ref,
    state,
    attempt: node?.attempt ?? null,
    current_track_id: node?.current_track_id ?? null,
    exit_code: node?.exit_code ?? null,
    output: node?.output ?? null,
  };
}
