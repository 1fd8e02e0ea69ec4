import { ulid } from '../../db/ids';
import { runsError } from './errors';
import type { PlatformDeps } from '../../platform/deps';
import { taskQueues } from '../../platform/temporal';
import { insertSubmittedRun, lockMeteredSecondsToday, type NewRun } from '../../db/runs/runs';
import type { KeyPrincipal } from '../../db/runs/tenants';
import type { RunWorkflowInput } from '../../workflows/runs/definitions';
import type { WorkflowStarter } from './workflow-starter';
import { imageAllowed, parseImageReference } from './image-reference';
import { clampLimits, effectiveLimits } from './limits';
import { nextWorkingInstant, parseWorkingHours } from './working-hours';
import { inlineWebhookRow, type InlineWebhookBody } from './webhooks/inline';

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
  deps: PlatformDeps,
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
  run: NewRun & { workflowInput: RunWorkflowInput };
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
 * One statement: the day's count, the row, its first event, its inline webhook and a metered
 * charge (see insertSubmittedRun); nothing is written when the day's limit is reached. A metered
 * key with a daily cap adds a transaction around it: its lock and the seconds charged today.
 */
async function storeRun(deps: PlatformDeps, principal: KeyPrincipal, planned: PlannedRun) {
  const { run, dailyRuns } = planned;
  const charge = run.metered ? { entryId: ulid(), seconds: run.timeoutSeconds } : null;
  const meteredCap =
    run.metered && principal.tier?.metered_seconds_per_day != null
      ? Number(principal.tier.metered_seconds_per_day)
      : null;
  const insert = async (db: Parameters<typeof insertSubmittedRun>[0]) =>
    (await insertSubmittedRun(db, run, dailyRuns, charge)) ? 'stored' : 'daily_quota_exceeded';
  const outcome =
    meteredCap === null
      ? await insert(deps.pool)
      : await deps.pool.transaction(async (tx) => {
          const charged = await lockMeteredSecondsToday(tx, principal);
          if (charged + run.timeoutSeconds > meteredCap) return 'metered_quota_exceeded';
          return insert(tx);
        });
  if (outcome === 'daily_quota_exceeded') {
    throw runsError(outcome, { details: { max_daily_runs: dailyRuns } });
  }
  if (outcome === 'metered_quota_exceeded') {
    throw runsError(outcome, {
      details: { metered_seconds_per_day: meteredCap, timeout_seconds: run.timeoutSeconds },
    });
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
  const next = nextWorkingInstant(parseWorkingHours(definition), new Date(startMs));
  if (next === null)
    throw runsError('invalid_shift_definition', {
      message: 'invalid_shift_definition: no working time',
    });
  return { eligibleStart: toMillisIso(Math.ceil(next.getTime())), workingHoursApplied: true };
}
