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
  if (!parseImageReference(request.image)) {
    throw runsError('invalid_image', { message: `invalid_image:${request.image}` });
  }
  if (!imageAllowed(request.image, principal.tier?.allowed_images ?? null)) {
    throw runsError('image_not_allowed', { details: { image: request.image } });
  }
  const webhook = inlineWebhookRow(request.webhook);
  const nowMs = Date.now();
  if (request.expiresAt !== null && Date.parse(request.expiresAt) <= nowMs) {
    throw runsError('expires_at_in_past');
  }
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

  const input: RunWorkflowInput = {
    trackId,
    tenantId: principal.tenantId,
    image: request.image,
    command: request.command,
    env: request.env,
    cpuLimit: clamped.cpuLimit,
    memoryLimitMb: clamped.memoryLimitMb,
    timeoutSeconds: clamped.timeoutSeconds,
    eligibleStart,
    expiresAt: request.expiresAt === null ? null : toMillisIso(Date.parse(request.expiresAt)),
    maxQueueSeconds: quotas.max_queue_seconds,
    tierConcurrentRuns: principal.tier?.concurrent_runs ?? null,
    metered,
    dockerAnyHostQueue: taskQueues(deps.config.taskQueuePrefix).runsDockerAnyHost,
    workingHoursTjp: workingHoursApplied ? quotas.working_hours_tjp : null,
  };
  const run: NewRun = {
    trackId,
    tenantId: principal.tenantId,
    keyId: principal.keyId,
    image: request.image,
    command: request.command,
    env: request.env,
    name: request.name,
    tags: request.tags,
    scheduledStart: request.scheduledStart === null ? null : toMillisIso(scheduledMs!),
    eligibleStart,
    expiresAt: request.expiresAt === null ? null : toMillisIso(Date.parse(request.expiresAt)),
    workingHoursApplied,
    maxQueueSeconds: quotas.max_queue_seconds,
    cpuLimit: String(clamped.cpuLimit),
    memoryLimitMb: clamped.memoryLimitMb,
    timeoutSeconds: clamped.timeoutSeconds,
    clamped: clamped.clamped,
    metered,
    workflowInput: input,
    workflowTaskQueue: taskQueues(deps.config.taskQueuePrefix).runs,
    webhook,
  };
  const charge = metered ? { entryId: ulid(), seconds: clamped.timeoutSeconds } : null;
  const meteredCap =
    metered && principal.tier?.metered_seconds_per_day != null
      ? Number(principal.tier.metered_seconds_per_day)
      : null;
  // One statement: the day's count, the row, its first event, its inline webhook and a metered
  // charge (see insertSubmittedRun); nothing is written when the day's limit is reached. A metered key
  // with a daily cap adds a transaction around it: its lock and the seconds charged today.
  let outcome: 'stored' | 'daily_quota_exceeded' | 'metered_quota_exceeded';
  if (meteredCap === null) {
    outcome = (await insertSubmittedRun(deps.pool, run, limits.daily_runs, charge))
      ? 'stored'
      : 'daily_quota_exceeded';
  } else {
    outcome = await deps.pool.transaction(async (tx) => {
      const charged = await lockMeteredSecondsToday(tx, principal);
      if (charged + clamped.timeoutSeconds > meteredCap) return 'metered_quota_exceeded';
      return (await insertSubmittedRun(tx, run, limits.daily_runs, charge))
        ? 'stored'
        : 'daily_quota_exceeded';
    });
  }
  if (outcome === 'daily_quota_exceeded') {
    throw runsError(outcome, { details: { max_daily_runs: limits.daily_runs } });
  }
  if (outcome === 'metered_quota_exceeded') {
    throw runsError(outcome, {
      details: { metered_seconds_per_day: meteredCap, timeout_seconds: clamped.timeoutSeconds },
    });
  }

  // Not awaited: the run is stored with its workflow input; the starter's queue starts the
  // workflow and its sweeper retries a failed start (workflow-starter.ts), so submit latency
  // does not include Temporal.
  starter.startInBackground(input);
  return {
    track_id: trackId,
    status: 'scheduled',
    eligible_start: eligibleStart,
    clamped: clamped.clamped,
  };
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
