import type { MeteringConfig } from '../../platform/config';
import { currentRequestId } from '../../platform/request-scope';
import { createQuotaClient, type QuotaClient } from '../../platform/quota-client/client';
import {
  QuotaUnavailable,
  quotaAnswer as answer,
  quotaCall as call,
  quotaRefusal as refusedCall,
  refusalCode,
} from '../../platform/quota-client/answers';
import { quotaCatalogue } from '../../platform/quota-client/catalogue';
import { runsError } from './errors';
import type { DatabasePool } from '../../db/pool';
import { listMeteredKeys, listMeteredTiers } from '../../db/runs/tenants';

/**
 * A metered key's run seconds, kept by the quota service: the tier is a quota plan
 * with one daily policy on the resource `runs-seconds`, the key is a subject on it, a run
 * reserves its timeout at submit (or at its node's launch) and commits the seconds it used when
 * it ends, the rest released. Every call is keyed by the run, so a retried activity, a crashed
 * worker's successor or the reconciler settles a run once. The runs service makes and changes
 * only what its key's constraints allow: catalogue names under `runs-`, subjects under `runs:`.
 */
export const RUN_SECONDS = 'runs-seconds';
export const RUNS_CATALOG_PREFIX = 'runs-';
export const RUNS_SUBJECT_PREFIX = 'runs:';
/** The policy a usage read reports the run seconds as (GET /api/v1/usage). */
export const METERED_USAGE_POLICY = 'metered_run_seconds';

/** A tier without metered_seconds_per_day: its policy counts but never refuses. */
const UNCAPPED = Number.MAX_SAFE_INTEGER;
/** The quota service holds a reservation at most this long (its ttl_seconds bound). */
const RESERVATION_TTL_MAX_SECONDS = 86_400;
const RESERVATION_TTL_MIN_SECONDS = 60;

/** A metered key: its subject names the tenant and the key. */
export interface MeteredKey {
  tenantId: string;
  keyId: string;
}
export const meteredSubject = (key: MeteredKey): string =>
  `${RUNS_SUBJECT_PREFIX}${key.tenantId}:${key.keyId}`;

const tierPlanName = (tier: string) => `${RUNS_CATALOG_PREFIX}${tier}`;
const tierPolicyName = (tier: string) => `${RUNS_CATALOG_PREFIX}${tier}-seconds-per-day`;
const reserveKey = (trackId: string) => `runs:${trackId}:reserve`;
const commitKey = (trackId: string) => `runs:${trackId}:commit`;
const usedKey = (trackId: string) => `runs:${trackId}:used`;

/** A request's answer to a quota service that did not answer: 503 metering_unavailable. */
export function meteringRefusal(error: unknown): never {
  if (error instanceof QuotaUnavailable)
    throw runsError('metering_unavailable', { retryAfterSeconds: 1 });
  throw error;
}

/** The key's day refused the seconds (`used` of `limit` already spent). */
export interface Refusal {
  refused: { limit: number; used: number; resetsAt: string | null };
}
/** A run's seconds held, or refused. */
export type Reservation = { reservationId: string } | Refusal;

/** The usage line of GET /api/v1/usage (its policy `metered_run_seconds`). */
export interface MeteredUsage {
  policy: string;
  used: number;
  limit: number;
  remaining: number;
  resets_at: string | null;
}

/** A run's end, as the settle takes it. */
export interface RunSettlement {
  key: MeteredKey;
  trackId: string;
  reservationId: string;
  /** Seconds the run used (rounded up), at most its timeout. */
  usedSeconds: number;
}

export type RunsMetering = ReturnType<typeof createRunsMetering>;

/**
 * The runs service's metering client, or null when metering is off (QUOTA_URL or RUNS_QUOTA_KEY
 * unset). Each process makes one where it builds its dependencies (the runs API, the worker, the
 * CLI) and hands it to every path that meters.
 */
export function createRunsMeteringIfOn(config: MeteringConfig | null): RunsMetering | null {
  return config === null ? null : createRunsMetering(config);
}

/** What a path that meters runs is given: its process's metering client, null when it is off. */
export interface MeteringDeps {
  metering: RunsMetering | null;
}

/**
 * A metered run's seconds (its clamped timeout) held before the run is stored, keyed by the run;
 * null when the key is unmetered or metering is off. They are held until the latest the run can
 * end: its deadline, or its eligible start plus its queue's wait, then its timeout.
 */
export async function holdRunSeconds(
  metering: RunsMetering | null,
  run: {
    metered: boolean;
    key: MeteredKey;
    trackId: string;
    timeoutSeconds: number;
    eligibleStart: string;
    maxQueueSeconds: number;
    expiresAt: string | null;
  },
): Promise<Reservation | null> {
  if (!run.metered || metering === null) return null;
  const latestStartMs = Math.min(
    run.expiresAt === null ? Infinity : Date.parse(run.expiresAt),
    Date.parse(run.eligibleStart) + run.maxQueueSeconds * 1000,
  );
  return metering.reserve({
    key: run.key,
    trackId: run.trackId,
    seconds: run.timeoutSeconds,
    ttlSeconds: reservationTtlSeconds(latestStartMs + run.timeoutSeconds * 1000, Date.now()),
  });
}

/**
 * The quota service brought in line with the metered tiers and their live keys (all of them, a
 * tier's or one key's): each tier's plan and daily policy made or updated, each key's subject
 * put on its tier's plan. Idempotent: `runs-admin` runs it after each change it makes, and
 * `runs-admin metering sync` for everything (when metering is turned on, say).
 */
export async function provisionMetering(
  pool: DatabasePool,
  metering: RunsMetering,
  filter: { tier?: string; keyId?: string } = {},
): Promise<{ tiers: string[]; keys: number }> {
  const keys = await listMeteredKeys(pool, filter);
  const tiers = new Map<string, number | null>();
  if (filter.keyId === undefined)
    for (const t of await listMeteredTiers(pool))
      if (filter.tier === undefined || t.tier === filter.tier)
        tiers.set(t.tier, t.cap === null ? null : Number(t.cap));
  for (const key of keys) tiers.set(key.tier, key.cap === null ? null : Number(key.cap));
  const plans = new Map<string, string>();
  for (const [tier, cap] of tiers) plans.set(tier, await metering.provisionTier({ tier, cap }));
  for (const key of keys) await metering.assignKey(key, plans.get(key.tier)!);
  return { tiers: [...tiers.keys()], keys: keys.length };
}

/** How long a run's reservation must last: until the latest its run can end, within the bounds. */
export function reservationTtlSeconds(latestEndMs: number, nowMs: number): number {
  const seconds = Math.ceil((latestEndMs - nowMs) / 1000) + RESERVATION_TTL_MIN_SECONDS;
  return Math.min(RESERVATION_TTL_MAX_SECONDS, Math.max(RESERVATION_TTL_MIN_SECONDS, seconds));
}

/** A commit's refusals that mean the reservation holds nothing any more. */
const NOT_HELD = ['reservation_expired', 'reservation_settled', 'reservation_not_found'];

/**
 * The quota service as the runs service meters in it: one client, each call a step below. The
 * key's constraints bound what it may touch (catalogue `runs-`, subjects `runs:`).
 */
export function createRunsMetering(config: MeteringConfig) {
  const quota = createQuotaClient({
    baseUrl: config.quotaUrl,
    apiKey: config.apiKey,
    requestId: currentRequestId,
  });
  const catalogue = quotaCatalogue(quota);
  return {
    /** The tier's plan and policy, made or brought up to date (its cap); returns the plan's id. */
    provisionTier: tierPlans(catalogue),

    /** Puts the key's subject on its tier's plan (provisionTier's id). */
    assignKey: (key: MeteredKey, planId: string) => catalogue.assign(meteredSubject(key), planId),

    /** Holds `seconds` of the key's day for a run; keyed by the run, so a retry holds once. */
    reserve: (input: SecondsToHold) => reserveSeconds(quota, input),

    /** Whether `seconds` would fit in the key's day now (a DAG's nodes at submit); holds nothing. */
    check: (key: MeteredKey, seconds: number) => checkSeconds(quota, key, seconds),

    /** Gives a reservation back whole (a run refused after its seconds were held). */
    release: (reservationId: string) => releaseReservation(quota, reservationId),

    /**
     * Charges a run the seconds it used: its reservation committed with them (the rest
     * released). A reservation no longer held (it expired: a run that waited or ran past a day;
     * or the quota service lost it) charges the seconds by a consume instead, keyed by the run.
     */
    settle: (run: RunSettlement) => settleRun(quota, run),

    /** The key's run seconds today, as its tier's policy counts them; null without a plan. */
    usage: (key: MeteredKey) => meteredUsageOf(quota, key),
  };
}

/** A run's seconds to hold in its key's day, until `ttlSeconds` from now at most. */
interface SecondsToHold {
  key: MeteredKey;
  trackId: string;
  seconds: number;
  ttlSeconds: number;
}

async function reserveSeconds(quota: QuotaClient, input: SecondsToHold): Promise<Reservation> {
  const reply = await answer('reserve', () =>
    quota.POST('/v1/reserve', {
      body: {
        subject: meteredSubject(input.key),
        items: [{ resource: RUN_SECONDS, amount: input.seconds }],
        idempotency_key: reserveKey(input.trackId),
        metadata: { track_id: input.trackId },
        ttl_seconds: input.ttlSeconds,
      },
    }),
  );
  if (reply.allowed && reply.reservation_id) return { reservationId: reply.reservation_id };
  return { refused: refusalOf(reply.results) };
}

async function checkSeconds(
  quota: QuotaClient,
  key: MeteredKey,
  seconds: number,
): Promise<{ fits: true } | Refusal> {
  if (seconds <= 0) return { fits: true };
  const reply = await answer('check', () =>
    quota.POST('/v1/check', {
      body: {
        subject: meteredSubject(key),
        items: [{ resource: RUN_SECONDS, amount: seconds }],
      },
    }),
  );
  return reply.allowed ? { fits: true } : { refused: refusalOf(reply.results) };
}

async function releaseReservation(quota: QuotaClient, reservationId: string): Promise<void> {
  await answer(
    'release',
    () =>
      quota.POST('/v1/reservations/{reservation_id}/release', {
        params: { path: { reservation_id: reservationId } },
        body: {},
      }),
    // Already settled or expired: nothing is held any more.
    [409],
  );
}

/** How a run's end was charged: by its reservation, by a consume, or refused by that consume. */
type Settled = 'committed' | 'consumed' | 'refused';

async function settleRun(quota: QuotaClient, run: RunSettlement): Promise<Settled> {
  const notHeld = await commitRunSeconds(quota, run);
  if (notHeld === null) return 'committed';
  // Settled: by this run's own commit past its key's 24 hours, or released.
  if (
    notHeld === 'reservation_settled' &&
    (await reservationStatus(quota, run.reservationId)) === 'committed'
  )
    return 'committed';
  if (run.usedSeconds === 0) return 'consumed';
  return consumeRunSeconds(quota, run);
}

/**
 * The run's reservation committed with the seconds it used: null when it is (now or before),
 * else the refusal's code that says it holds nothing any more (NOT_HELD); any other is thrown.
 */
async function commitRunSeconds(quota: QuotaClient, run: RunSettlement): Promise<string | null> {
  const { data, error, response } = await call('commit', () =>
    quota.POST('/v1/reservations/{reservation_id}/commit', {
      params: { path: { reservation_id: run.reservationId } },
      body: {
        actuals: [{ resource: RUN_SECONDS, amount: run.usedSeconds }],
        idempotency_key: commitKey(run.trackId),
      },
    }),
  );
  if (data) return null;
  const code = refusalCode(error);
  // Committed already by another end path (the reconciler's count of the seconds differs).
  if (code === 'idempotency_key_reused') return null;
  if (!NOT_HELD.includes(code)) throw refusedCall('commit', response, error);
  return code;
}

async function reservationStatus(quota: QuotaClient, reservationId: string) {
  const reservation = await answer('reservation', () =>
    quota.GET('/v1/reservations/{reservation_id}', {
      params: { path: { reservation_id: reservationId } },
    }),
  );
  return reservation.status;
}

/** The seconds a run used, charged by a consume keyed by the run (its reservation held none). */
async function consumeRunSeconds(quota: QuotaClient, run: RunSettlement): Promise<Settled> {
  const consumed = await answer('consume', () =>
    quota.POST('/v1/consume', {
      body: {
        subject: meteredSubject(run.key),
        items: [{ resource: RUN_SECONDS, amount: run.usedSeconds }],
        idempotency_key: usedKey(run.trackId),
        metadata: { track_id: run.trackId, reservation_id: run.reservationId },
      },
    }),
  );
  return consumed.allowed ? 'consumed' : 'refused';
}

async function meteredUsageOf(quota: QuotaClient, key: MeteredKey): Promise<MeteredUsage | null> {
  const reply = await answer('usage', () =>
    quota.GET('/v1/subjects/{subject}/usage', {
      params: { path: { subject: meteredSubject(key) } },
    }),
  );
  const line = reply.usage.find((u) => u.resource === RUN_SECONDS && u.kind === 'quota');
  if (!line) return null;
  return {
    policy: METERED_USAGE_POLICY,
    used: Number(line.used),
    limit: Number(line.limit),
    remaining: Number(line.remaining),
    resets_at: line.window?.resets_at ?? null,
  };
}

/** A tier's plan and its daily policy of run seconds. */
function tierPlans(catalogue: ReturnType<typeof quotaCatalogue>) {
  return async (tier: { tier: string; cap: number | null }): Promise<string> => {
    const resourceId = await catalogue.resource(RUN_SECONDS, 'seconds of metered runs', 'second');
    const policyId = await catalogue.policy({
      name: tierPolicyName(tier.tier),
      resource_id: resourceId,
      kind: 'quota',
      limit_amount: tier.cap ?? UNCAPPED,
      window_kind: 'fixed',
      window_unit: 'day',
      window_size: 1,
      tz: 'UTC',
      // Exact and written at once: a run's reservation and commit are in the ledger when the
      // call answers.
      enforcement_mode: 'strict',
      on_exceed: 'block',
    });
    return catalogue.plan(tierPlanName(tier.tier), `runs tier ${tier.tier}`, policyId);
  };
}

/** The usage a refusal reports: the refusing policy's limit and what the day has used. */
function refusalOf(
  results: {
    allowed: boolean;
    limit: number;
    used: number;
    window: { resets_at: string | null } | null;
  }[],
): { limit: number; used: number; resetsAt: string | null } {
  const refusing = results.find((r) => !r.allowed) ?? results[0];
  return {
    limit: Number(refusing?.limit ?? 0),
    used: Number(refusing?.used ?? 0),
    resetsAt: refusing?.window?.resets_at ?? null,
  };
}
