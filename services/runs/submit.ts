import { ulid } from '../../db/ids';
import { runsError } from './errors';
import type { PlatformDeps } from '../../platform/deps';
import { taskQueues } from '../../contracts/shared/task-queues';
import { insertSubmittedRun, type NewRun } from '../../db/runs/runs';
import type { KeyPrincipal } from '../../db/runs/tenants';
import type { RunWorkflowInput } from '../../contracts/runs/run';
import type { WorkflowStarter } from './workflow-starter';
import { imageAllowed, parseImageReference } from './image-reference';
import { clampLimits, effectiveLimits } from './limits';
import { nextWorkingInstant, parseWorkingHours } from './working-hours';
import { inlineWebhookRow, type InlineWebhookBody } from './webhooks/inline';
import { holdRunSeconds, meteringRefusal, type MeteringDeps } from './metering';

export interface SubmitRequest {
  image: string;
  command: string[];
  env: Record<string, string>;
  scheduledStart: string | null;
  expiresAt: string | null;
  timeoutSeconds: number | null;
  cpuLimit: number | null;
  memoryLimitMb: number | null;
  name: string | null;
  tags: string[];
  /** The inline webhook as its schema accepted it; stored with the run. */
  webhook?: InlineWebhookBody;
}

export interface SubmitResponse {
  track_id: string;
  status: 'scheduled';
  eligible_start: string;
  clamped: boolean;
}

const toMillisIso = (ms: number): string => new Date(ms).toISOString();

/**
 * Accepts a run: validates what joi cannot (image grammar, allowlist, its inline webhook's url
 * and events, deadlines), clamps its limits to the key's maxima, counts it against the UTC day,
 * stores it with its first event and its inline webhook, and starts its workflow. Never refused
 * for capacity: runs wait for a slot at dispatch.
 */
export async function submitRun(
  deps: PlatformDeps & MeteringDeps,
  starter: WorkflowStarter,
  principal: KeyPrincipal,
  request: SubmitRequest,
): Promise<SubmitResponse> {
  const nowMs = Date.now();
  const webhook = checkSubmittable(principal, request, nowMs);
  const planned = plannedRun(deps, principal, { ...request, webhook }, nowMs);
  await storeRun(deps, principal, planned);
  // Not awaited: the run is stored with its workflow input; the starter's queue starts the
  // workflow and its sweeper retries a failed start (workflow-starter.ts), so submit latency
  // does not include Temporal.
  starter.startInBackground(planned.run.workflowInput);
  return {
    track_id: planned.run.trackId,
    status: 'scheduled',
    eligible_start: planned.run.eligibleStart,
    clamped: planned.run.clamped,
  };
}

/**
 * What joi cannot check, in the order of its refusals: the image's grammar and allowlist, the
 * inline webhook's url and events (its row answered), a deadline already past.
 */
function checkSubmittable(principal: KeyPrincipal, request: SubmitRequest, nowMs: number) {
  if (!parseImageReference(request.image)) {
    throw runsError('invalid_image', { message: `invalid_image:${request.image}` });
  }
  if (!imageAllowed(request.image, principal.tier?.allowed_images ?? null)) {
    throw runsError('image_not_allowed', { details: { image: request.image } });
  }
  const webhook = inlineWebhookRow(request.webhook);
  if (request.expiresAt !== null && Date.parse(request.expiresAt) <= nowMs) {
    throw runsError('expires_at_in_past');
  }
  return webhook;
}

interface PlannedRun {
  run: Omit<NewRun, 'quotaReservationId'> & { workflowInput: RunWorkflowInput };
  dailyRuns: number;
}

/** The run as it is stored and started: its limits clamped to the key's, its eligible start. */
function plannedRun(
  deps: PlatformDeps,
  principal: KeyPrincipal,
  request: Omit<SubmitRequest, 'webhook'> & { webhook: ReturnType<typeof inlineWebhookRow> },
  nowMs: number,
): PlannedRun {
  // Read with the key by authenticate() (one statement for both).
  const quotas = principal.quotas;
  const limits = effectiveLimits(quotas, principal.tier);
  const clamped = clampLimits(request, limits);
  const scheduledMs = request.scheduledStart === null ? null : Date.parse(request.scheduledStart);
  const requestedStartMs = Math.max(scheduledMs ?? nowMs, nowMs);
  const { eligibleStart, workingHoursApplied } = applyWorkingHours(
    quotas.working_hours_tjp,
    requestedStartMs,
  );
  const trackId = ulid();
  const metered = principal.tier?.metered ?? false;
  const expiresAt = request.expiresAt === null ? null : toMillisIso(Date.parse(request.expiresAt));
  const queues = taskQueues(deps.config.taskQueuePrefix);
  const { image, command, env } = request;
  const { cpuLimit, memoryLimitMb, timeoutSeconds } = clamped;
  const workflowInput: RunWorkflowInput = {
    ...{ trackId, tenantId: principal.tenantId, image, command, env },
    ...{ cpuLimit, memoryLimitMb, timeoutSeconds, eligibleStart, expiresAt },
    maxQueueSeconds: quotas.max_queue_seconds,
    tierConcurrentRuns: principal.tier?.concurrent_runs ?? null,
    metered,
    dockerAnyHostQueue: queues.runsDockerAnyHost,
    workingHoursTjp: workingHoursApplied ? quotas.working_hours_tjp : null,
  };
  const run = {
    ...{ trackId, tenantId: principal.tenantId, keyId: principal.keyId, image, command, env },
    ...{ name: request.name, tags: request.tags, eligibleStart, expiresAt, workingHoursApplied },
    scheduledStart: scheduledMs === null ? null : toMillisIso(scheduledMs),
    maxQueueSeconds: quotas.max_queue_seconds,
    ...{ cpuLimit: String(cpuLimit), memoryLimitMb, timeoutSeconds, clamped: clamped.clamped },
    metered,
    workflowInput,
    workflowTaskQueue: queues.runs,
    webhook: request.webhook,
  };
  return { run, dailyRuns: limits.daily_runs };
}

/**
 * A metered run's seconds held by the quota service first (refused: 429
 * metered_quota_exceeded), then one statement: the day's count, the row with its reservation,
 * its first event and its inline webhook (see insertSubmittedRun). A run refused or not stored
 * gives its seconds back; nothing of it is written.
 */
async function storeRun(
  deps: PlatformDeps & MeteringDeps,
  principal: KeyPrincipal,
  planned: PlannedRun,
) {
  const { run, dailyRuns } = planned;
  const { metering } = deps;
  const held = await holdRunSeconds(metering, { ...run, key: principal }).catch(meteringRefusal);
  if (held && 'refused' in held)
    throw runsError('metered_quota_exceeded', {
      details: {
        metered_seconds_per_day: held.refused.limit,
        used_seconds: held.refused.used,
        timeout_seconds: run.timeoutSeconds,
      },
    });
  const quotaReservationId = held?.reservationId ?? null;
  // Not given back (the quota service did not answer): held until its ttl, then released there.
  const giveBack = async () => {
    if (quotaReservationId === null) return;
    await metering!
      .release(quotaReservationId)
      .catch((error: unknown) =>
        deps.logger.warn({ err: error, trackId: run.trackId }, 'run seconds not given back'),
      );
  };
  let stored: boolean;
  try {
    stored = await insertSubmittedRun(deps.pool, { ...run, quotaReservationId }, dailyRuns);
  } catch (error) {
    await giveBack();
    throw error;
  }
  if (!stored) {
    await giveBack();
    throw runsError('daily_quota_exceeded', { details: { max_daily_runs: dailyRuns } });
  }
}

/**
 * With a working-hours definition, a run becomes eligible at the first working instant at or
 * after its requested start (computed at submit; a later change of the definition does not move
 * runs already accepted).
 */
function applyWorkingHours(definition: string | null, startMs: number) {
  if (definition === null)
    return { eligibleStart: toMillisIso(startMs), workingHoursApplied: false };
  const next = nextWorkingInstant(
    parseWorkingHours(definition, { stored: true }),
    new Date(startMs),
  );
  if (next === null)
    throw runsError('invalid_shift_definition', {
      message: 'invalid_shift_definition: no working time',
    });
  return { eligibleStart: toMillisIso(Math.ceil(next.getTime())), workingHoursApplied: true };
}
