import { ulid } from '../../../db/ids';
import { auditOf } from '../audit';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import {
  cancelTimer,
  findTimer,
  insertTimer,
  listTimers,
  lockPendingTimerCount,
  type TimerFilter,
} from '../../../db/runs/timers';
import type { PlatformDeps } from '../../../platform/deps';
import { timerWorkflowId } from '../../../contracts/runs/timer';
import { runsError } from '../errors';
import { inlineWebhookRow, type InlineWebhookBody } from '../webhooks/inline';
import { runsQueue } from '../webhooks/starter';
import { presentTimer, presentTimerSummary } from './models';
import { payloadJsonOf } from '../payloads';
import type { TimerStarter } from './starter';

/**
 * A tenant's timers: create (under max_pending_timers), read, list, cancel. Each change is
 * audited in its transaction (timer.create, timer.cancel). Firing is the workflow's
 * (activities/runs/timers.ts); the row decides between a fire and a cancel.
 */

type Deps = Pick<PlatformDeps, 'pool' | 'config' | 'temporal' | 'logger'>;

/** The create body as its schema accepted it (defaults filled). */
export interface TimerCreateBody {
  fire_at: string;
  payload: unknown;
  labels: Record<string, string>;
  webhook?: InlineWebhookBody;
}

const notFound = () => runsError('timer_not_found');

const audit = auditOf('timer');

/**
 * Creates a pending timer (and its inline webhook) unless the tenant already has
 * max_pending_timers pending ones (429): counted and inserted under its quota row's lock, so two
 * creations cannot both take the last slot. Its workflow timer/<timer_id> is started after the
 * commit (an outbox: the sweeper starts it if this process cannot).
 */
export async function createTimer(
  deps: Deps,
  starter: TimerStarter,
  principal: KeyPrincipal,
  body: TimerCreateBody,
) {
  const payloadJson = payloadJsonOf(body.payload);
  const webhook = inlineWebhookRow(body.webhook);
  const timerId = ulid();
  const row = await deps.pool.transaction(async (tx) => {
    const { max, pending } = await lockPendingTimerCount(tx, principal.tenantId);
    if (pending >= max)
      throw runsError('timer_quota_exceeded', { details: { max_pending_timers: max } });
    const created = await insertTimer(tx, {
      timerId,
      tenantId: principal.tenantId,
      fireAt: body.fire_at,
      payloadJson,
      labels: body.labels,
      workflowTaskQueue: runsQueue(deps),
      webhook,
    });
    await audit(tx, principal, 'create', timerId, {
      fire_at: created.fire_at,
      inline_webhook: webhook !== null,
    });
    return created;
  });
  starter.startInBackground({ timerId, tenantId: principal.tenantId, fireAt: row.fire_at });
  return presentTimer(row);
}

export async function getTimer(deps: Deps, tenantId: string, timerId: string) {
  const row = await findTimer(deps.pool, tenantId, timerId);
  if (!row) throw notFound();
  return presentTimer(row);
}

export async function listTenantTimers(deps: Deps, tenantId: string, filter: TimerFilter) {
  const rows = await listTimers(deps.pool, tenantId, filter);
  return { timers: rows.map(presentTimerSummary), limit: filter.limit, offset: filter.offset };
}

/**
 * Cancels a pending timer: one conditional UPDATE decides (a fire that committed first makes it
 * 409 timer_already_fired; a cancelled timer stays cancelled, answered as done). Then its
 * workflow is cancelled, best effort: one that misses the request finds the row cancelled when
 * it wakes and fires nothing.
 */
export async function deleteTimer(deps: Deps, principal: KeyPrincipal, timerId: string) {
  const result = await deps.pool.transaction(async (tx) => {
    const outcome = await cancelTimer(tx, principal.tenantId, timerId);
    if (outcome?.outcome === 'cancelled') await audit(tx, principal, 'cancel', timerId);
    return outcome;
  });
  if (result === null) throw notFound();
  if (result.outcome === 'unchanged') {
    if (result.state === 'fired') throw runsError('timer_already_fired');
    return;
  }
  void cancelExecution(deps, timerId);
}

async function cancelExecution(deps: Deps, timerId: string): Promise<void> {
  try {
    await deps.temporal.workflow.getHandle(timerWorkflowId(timerId)).cancel();
  } catch (error) {
    // Not started yet (the sweeper leaves a cancelled row), already ended, or Temporal away:
    // the row is cancelled, which is what the workflow reads before it fires.
    deps.logger.debug({ err: (error as Error).message, timerId }, 'timer workflow not cancelled');
  }
}
