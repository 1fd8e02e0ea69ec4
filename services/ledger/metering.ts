import { ledgerError } from './errors';
import type { DatabasePool } from '../../db/pool';
import { withSystem } from '../../db/ledger/context';
import { recordUnmeteredCall } from '../../db/ledger/metering-replay';
import type { Logger } from '../../platform/logger';
import type { MeteringConfig } from '../../platform/config';
import type { Principal } from './credentials';
import { countingBatcher, type NaturalBatcher } from '../../platform/batching';
import { createQuotaClient, type QuotaClient } from '../../platform/quota-client/client';
import { QuotaUnavailable, quotaAnswer } from '../../platform/quota-client/answers';
import { quotaCatalogue } from '../../platform/quota-client/catalogue';

/**
 * The monthly call quota of each root tenant (a sub-tenant's calls count against its root),
 * kept by the quota service: the resource `ledger-calls`, one monthly fast policy
 * `ledger-calls-per-month` (its limit LEDGER_MONTHLY_CALL_QUOTA) on the plan `ledger-monthly`,
 * and each root tenant the subject `ledger:<tenant_id>` on it. The ledger makes and changes only
 * what its key's constraints allow: catalogue names under `ledger-`, subjects under `ledger:`.
 */
export const LEDGER_CALLS = 'ledger-calls';
export const LEDGER_CATALOG_PREFIX = 'ledger-';
export const LEDGER_SUBJECT_PREFIX = 'ledger:';
const POLICY_NAME = 'ledger-calls-per-month';
const PLAN_NAME = 'ledger-monthly';

export const callsSubject = (rootTenantId: string): string =>
  `${LEDGER_SUBJECT_PREFIX}${rootTenantId}`;

/** Calls of one root tenant per consume at most (the calls waiting, and those taken ahead). */
const METER_BATCH_SIZE_MAX = 256;
/** A posting waits on its meter: a quota service that does not answer within this is not there. */
const METER_TIMEOUT_MS = 2_000;
/**
 * Calls a process takes ahead for a root tenant with its consume: at most what is left of the
 * month over this, so near the limit it takes none and every call is decided by the quota
 * service (another process's allowance can then only make it refuse early, never admit more).
 */
const AHEAD_SHARE = 16;
/** An allowance not used for this long is given back (so is every allowance when the API stops). */
const ALLOWANCE_IDLE_MS = 5_000;

export const monthOf = (date: Date): string => date.toISOString().slice(0, 7);

function secondsUntil(resetsAt: string | null, now: Date): number {
  const next = resetsAt
    ? Date.parse(resetsAt)
    : Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/** A counted call, for a caller that learns afterwards that the call was not an authenticated one. */
export interface MeteredCall {
  uncount(): Promise<void>;
}

/** A call served unmetered stays recorded until it is replayed (metering-replay.ts). */
const UNCOUNTABLE: MeteredCall = { uncount: () => Promise.resolve() };

/** One call's place in its batch: admitted, or past the month's limit until `resetsAt`. */
type Verdict = { allowed: true } | { allowed: false; resetsAt: string | null };

export type CallMeter = (principal: Principal) => Promise<MeteredCall>;

/**
 * Calls of one root tenant this process has consumed in the quota service and not yet served:
 * served from here without a round trip, in the month they were counted in.
 */
interface Allowance {
  calls: number;
  /** What the policy had left of the month after the last consume (the next one's size). */
  remaining: number;
  /** The end of the month they were counted in; null: not known (no policy answered). */
  resetsAtMs: number | null;
  lastUsedMs: number;
}

/** The meter's quota service, the pool it records unmetered calls in, the monthly limit. */
interface CallMeterDeps {
  metering: MeteringConfig;
  pool: DatabasePool;
  logger: Logger;
  monthlyCallQuota: number;
}

/** What the meter's steps share: its quota client, the plan's subjects, the allowances held. */
interface MeterState {
  deps: CallMeterDeps;
  quota: QuotaClient;
  subjects: ReturnType<typeof meteredSubjects>;
  /** By subject: calls consumed ahead and not yet served. */
  allowances: Map<string, Allowance>;
}

/**
 * The call meter of an API process. A root tenant's call is served from this process's
 * allowance when it has one; otherwise the calls of that tenant that wait while its last consume
 * is out go together in the next, one consume of their count plus an allowance taken ahead (at
 * most what is left of the month over AHEAD_SHARE, at most METER_BATCH_SIZE_MAX in all). The
 * policy admits past its limit and says by how much: the calls past it are refused 429
 * QUOTA_EXCEEDED and given back in one refund, so exactly the calls under the limit are served,
 * as one counter would. An allowance idle for ALLOWANCE_IDLE_MS, or held when the API stops, is
 * given back. When the quota service does not answer, the call is served and recorded in
 * ledger.unmetered_calls, replayed later.
 */
export function quotaCallMeter(deps: CallMeterDeps): { meter: CallMeter; stop(): Promise<void> } {
  const quota = createQuotaClient({
    baseUrl: deps.metering.quotaUrl,
    apiKey: deps.metering.apiKey,
    attempts: 1,
    timeoutMs: METER_TIMEOUT_MS,
  });
  const state: MeterState = {
    deps,
    quota,
    subjects: meteredSubjects(quota, deps.monthlyCallQuota),
    allowances: new Map(),
  };
  const batcher = countingBatcher(METER_BATCH_SIZE_MAX, (subject, calls) =>
    consumeCalls(state, subject, calls),
  );
  const idle = setInterval(() => giveBackIdle(state), ALLOWANCE_IDLE_MS / 5);
  idle.unref();
  return {
    meter: (principal) => meterCall(state, batcher, principal),
    async stop() {
      clearInterval(idle);
      await giveBackAll(state);
    },
  };
}

/**
 * One call's verdict: served from the allowance, or from its batch's consume; served unmetered
 * (and recorded) when the quota service does not answer; 429 QUOTA_EXCEEDED past the month's
 * limit.
 */
async function meterCall(
  state: MeterState,
  batcher: NaturalBatcher<null, Verdict>,
  principal: Principal,
): Promise<MeteredCall> {
  const subject = callsSubject(principal.rootTenantId);
  const served = fromAllowance(state.allowances, subject);
  if (served) return served;
  let verdict: Verdict;
  try {
    verdict = await batcher.submit(subject, null);
  } catch (error) {
    if (!(error instanceof QuotaUnavailable)) throw error;
    await recordUnmetered(state.deps, principal.rootTenantId, error);
    return UNCOUNTABLE;
  }
  if (!verdict.allowed) {
    throw ledgerError('QUOTA_EXCEEDED', {
      message: `monthly call quota of ${state.deps.monthlyCallQuota} reached`,
      retryAfterSeconds: secondsUntil(verdict.resetsAt, new Date()),
    });
  }
  return {
    uncount: async () => {
      const allowance = state.allowances.get(subject);
      if (allowance) allowance.calls++;
      else await giveBack(state, subject, 1);
    },
  };
}

/** A call served from the allowance, given back to it when it was not an authenticated one. */
function fromAllowance(allowances: Map<string, Allowance>, subject: string): MeteredCall | null {
  const allowance = allowances.get(subject);
  const now = Date.now();
  if (!allowance || allowance.calls === 0) return null;
  // Counted in a month that has ended: this call is the new month's.
  if (allowance.resetsAtMs !== null && now >= allowance.resetsAtMs) {
    allowances.delete(subject);
    return null;
  }
  allowance.calls--;
  allowance.lastUsedMs = now;
  return {
    uncount: () => {
      allowance.calls++;
      return Promise.resolve();
    },
  };
}

/**
 * The calls of a root tenant that waited for its last consume, consumed in one with the calls
 * taken ahead; a verdict for each, in arrival order. The calls past the month's limit are given
 * back, and those taken ahead kept as the tenant's allowance.
 */
async function consumeCalls(state: MeterState, subject: string, calls: number): Promise<Verdict[]> {
  await state.subjects.assign(subject);
  const ahead = Math.min(
    METER_BATCH_SIZE_MAX - calls,
    Math.floor((state.allowances.get(subject)?.remaining ?? 0) / AHEAD_SHARE),
  );
  const reply = await quotaAnswer('consume', () =>
    state.quota.POST('/v1/consume', {
      body: { subject, items: [{ resource: LEDGER_CALLS, amount: calls + ahead }] },
    }),
  );
  const monthly = reply.results.find((r) => r.resource === LEDGER_CALLS);
  // Degraded (the quota service's Redis out of reach): admitted but not counted, so nothing
  // is kept ahead, and the next consume takes none until a counted answer says what is left.
  const past = reply.degraded ? ahead : Math.min(calls + ahead, Number(monthly?.overage ?? 0));
  if (past > 0) void giveBack(state, subject, past);
  const admitted = calls + ahead - past;
  const resetsAt = monthly?.window?.resets_at ?? null;
  keepAllowance(state.allowances, subject, {
    ahead: Math.max(0, admitted - calls),
    remaining: reply.degraded ? 0 : Number(monthly?.remaining ?? 0),
    resetsAt,
  });
  const refused: Verdict = { allowed: false, resetsAt };
  return Array.from({ length: calls }, (_, i): Verdict =>
    i < admitted ? { allowed: true } : refused,
  );
}

/**
 * The calls a consume took ahead added to the allowance as it is now (calls served from it or
 * given back to it meanwhile), with what the policy said is left of the month and when it ends.
 */
function keepAllowance(
  allowances: Map<string, Allowance>,
  subject: string,
  taken: { ahead: number; remaining: number; resetsAt: string | null },
): void {
  allowances.set(subject, {
    calls: (allowances.get(subject)?.calls ?? 0) + taken.ahead,
    remaining: taken.remaining,
    resetsAtMs: taken.resetsAt === null ? null : Date.parse(taken.resetsAt),
    lastUsedMs: Date.now(),
  });
}

/** Calls refunded to the quota service; a refund that fails is logged (the calls stay counted). */
async function giveBack(state: MeterState, subject: string, calls: number): Promise<void> {
  try {
    await quotaAnswer('refund', () =>
      state.quota.POST('/v1/refund', {
        body: { subject, items: [{ resource: LEDGER_CALLS, amount: calls }] },
      }),
    );
  } catch (error) {
    state.deps.logger.warn(
      { err: error, subject, calls },
      'calls not given back to the quota service',
    );
  }
}

/** The allowances not used for ALLOWANCE_IDLE_MS given back (those of an ended month dropped). */
function giveBackIdle(state: MeterState): void {
  const now = Date.now();
  for (const [subject, allowance] of state.allowances) {
    if (now - allowance.lastUsedMs < ALLOWANCE_IDLE_MS) continue;
    state.allowances.delete(subject);
    const ended = allowance.resetsAtMs !== null && now >= allowance.resetsAtMs;
    if (allowance.calls > 0 && !ended) void giveBack(state, subject, allowance.calls);
  }
}

/** Every allowance given back (the API stops). */
async function giveBackAll(state: MeterState): Promise<void> {
  const held = [...state.allowances].filter(([, a]) => a.calls > 0);
  state.allowances.clear();
  await Promise.all(held.map(([subject, a]) => giveBack(state, subject, a.calls)));
}

/**
 * A new root tenant's subject put on the plan (made first), so it is in the quota service before
 * its first call: what `ledger-admin tenant create` does. 'unreachable': the meter puts it there
 * before the tenant's first call is counted.
 */
export async function meterNewTenant(
  metering: MeteringConfig,
  monthlyCallQuota: number,
  tenantId: string,
): Promise<{ subject: string } | 'unreachable'> {
  const quota = createQuotaClient({ baseUrl: metering.quotaUrl, apiKey: metering.apiKey });
  const subject = callsSubject(tenantId);
  try {
    await meteredSubjects(quota, monthlyCallQuota).assign(subject);
  } catch (error) {
    if (error instanceof QuotaUnavailable) return 'unreachable';
    throw error;
  }
  return { subject };
}

/** The plan made (its limit brought to the configured one) and each subject put on it, once. */
function meteredSubjects(quota: QuotaClient, monthlyCallQuota: number) {
  const catalogue = quotaCatalogue(quota);
  let plan: Promise<string> | null = null;
  const planId = () =>
    (plan ??= provisionPlan(catalogue, monthlyCallQuota).catch((error: unknown) => {
      plan = null;
      throw error;
    }));
  const assigned = new Set<string>();
  return {
    async assign(subject: string): Promise<void> {
      if (assigned.has(subject)) return;
      await catalogue.assign(subject, await planId());
      assigned.add(subject);
    },
  };
}

async function provisionPlan(
  catalogue: ReturnType<typeof quotaCatalogue>,
  monthlyCallQuota: number,
): Promise<string> {
  const resourceId = await catalogue.resource(LEDGER_CALLS, 'calls to the ledger API', 'call');
  const policyId = await catalogue.policy({
    name: POLICY_NAME,
    resource_id: resourceId,
    kind: 'quota',
    limit_amount: monthlyCallQuota,
    window_kind: 'fixed',
    window_unit: 'month',
    window_size: 1,
    tz: 'UTC',
    // One Redis script per batch; admitted past the limit, which the meter refuses and gives back.
    enforcement_mode: 'fast',
    on_exceed: 'allow_overage',
  });
  return catalogue.plan(PLAN_NAME, 'the ledger monthly call quota', policyId);
}

async function recordUnmetered(
  deps: { pool: DatabasePool; logger: Logger },
  tenantId: string,
  why: QuotaUnavailable,
): Promise<void> {
  deps.logger.warn({ err: why.message, tenantId }, 'metering unreachable; call served unmetered');
  await withSystem(deps.pool, (tx) => recordUnmeteredCall(tx, tenantId, monthOf(new Date()))).catch(
    (dbError: unknown) => deps.logger.error({ err: dbError }, 'unmetered call not recorded'),
  );
}
