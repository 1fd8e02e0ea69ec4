import type { EffectivePolicyRow } from '../../../db/quota/consumption';
import { ulid } from '../../../db/ids';
import {
  commitFastStates,
  readFastStates,
  type FastState,
  type GenerationGuard,
  type FastWrite,
} from '../../../db/quota/fast-state';
import { fastStateKey, subjectPartition } from '../../../db/quota/partitions';
import type { Redis } from '../../../db/redis';
import { isBackendUnreachable } from '../../../db/unreachable';
import { quotaError } from '../errors';
import { MICRO } from './verdicts';
import {
  bucketVerdict,
  currentWindow,
  limitOf,
  quotaVerdict,
  type DecisionContext,
  type PolicyVerdict,
} from './verdicts';

/**
 * Fast-mode verdicts: the same arithmetic as strict mode (decideQuota, takeTokens) on state read
 * from Redis (db/quota/fast-state.ts), each carrying the write that applies it if the state has
 * not moved since. No lock is taken; a commit that finds a state moved is decided again.
 */
export interface FastVerdict extends PolicyVerdict {
  /** The write that applies the verdict; null when Redis could not be read (degraded). */
  write: FastWrite | null;
}

/** A bucket idle this long is stored without expiry rather than until it is full again. */
const BUCKET_EXPIRY_MAX_MS = 400 * 24 * 3_600_000;
/** How often a decision is made again when the state it read keeps moving. */
const ATTEMPTS_MAX = 100;

/** What a try answers when a state it read moved before its commit: decide again. */
export const MOVED = Symbol('moved');

/**
 * Runs `attempt` until it answers (rather than MOVED), at most 100 times; then 503
 * decision_contended, which a client retries.
 */
export async function untilUnmoved<T>(attempt: () => Promise<T | typeof MOVED>): Promise<T> {
  for (let i = 0; i < ATTEMPTS_MAX; i++) {
    const answer = await attempt();
    if (answer !== MOVED) return answer;
  }
  throw quotaError('decision_contended', { retryAfterSeconds: 1 });
}

/** The field of a quota's state that holds a window's (or a rolling window's bucket's) usage. */
export const windowField = (windowKey: string) => `w:${windowKey}`;
const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);

function fastQuotaVerdict(
  context: DecisionContext,
  policy: EffectivePolicyRow,
  requested: bigint,
  state: FastState,
): FastVerdict {
  const window = currentWindow(policy, context.nowMs);
  const usedIn = (key: string) => BigInt(state.fields.get(windowField(key)) ?? '0');
  const used = window.keys.reduce((sum, key) => sum + usedIn(key), 0n);
  return {
    ...quotaVerdict(context, policy, window, used, requested),
    write: {
      key: fastStateKey(context.tenantId, policy.id, context.subject),
      expectedVersion: state.version,
      // A refund gives back at most what the current window holds, as strict mode's counter.
      set: {
        [windowField(window.currentKey)]: maxOf(
          0n,
          usedIn(window.currentKey) + requested,
        ).toString(),
      },
      keep: window.keys.map(windowField),
      expireAtMs: window.currentExpiresMs,
    },
  };
}

function fastBucketVerdict(
  context: DecisionContext,
  policy: EffectivePolicyRow,
  requested: bigint,
  state: FastState,
): FastVerdict {
  const micro = state.fields.get('micro');
  const previous =
    micro === undefined
      ? null
      : { micro: BigInt(micro), updatedMs: Number(state.fields.get('ms')) };
  const { verdict, next } = bucketVerdict(context, policy, previous, requested);
  // Once full again the bucket is the same as none: it may go.
  const missing = Number(verdict.limit * MICRO - next.micro);
  const fullInMs = Math.ceil(missing / (policy.refill_rate_per_sec! * 1_000));
  return {
    ...verdict,
    write: {
      key: fastStateKey(context.tenantId, policy.id, context.subject),
      expectedVersion: state.version,
      set: { micro: next.micro.toString(), ms: String(next.updatedMs) },
      keep: null,
      expireAtMs: fullInMs <= BUCKET_EXPIRY_MAX_MS ? next.updatedMs + fullInMs + 1 : null,
    },
  };
}

/**
 * A fast policy's answer while Redis cannot be read: its `on_backend_error` (fast mode's default:
 * allow) decides, usage unknown (reported as none used), nothing to write.
 */
function degradedVerdict(
  context: DecisionContext,
  policy: EffectivePolicyRow,
  requested: bigint,
): FastVerdict {
  const limit = limitOf(policy);
  return {
    policy,
    requested,
    allowed: (policy.on_backend_error ?? 'allow') === 'allow',
    limit,
    used: 0n,
    remaining: limit,
    overage: 0n,
    window: policy.kind === 'quota' ? currentWindow(policy, context.nowMs) : null,
    retryAfterMs: null,
    write: null,
  };
}

export interface FastDecision {
  verdicts: FastVerdict[];
  /** An idempotency key's recorded answer, when one was asked for and exists. */
  recorded: string | null;
  /** Redis could not be read: every verdict is its policy's on_backend_error. */
  degraded: boolean;
  /** The guard's generations were no longer current (verdicts judged by an old catalogue). */
  generationMoved: boolean;
}

/** Every fast policy's verdict on the request's amounts per resource, read in one round trip. */
export async function decideFast(
  redis: Redis,
  context: DecisionContext,
  policies: EffectivePolicyRow[],
  amounts: Map<string, bigint>,
  idempotencyKey?: string,
  guard?: GenerationGuard,
): Promise<FastDecision> {
  const requestedOf = (policy: EffectivePolicyRow) => amounts.get(policy.resource) ?? 0n;
  const keys = policies.map((p) => fastStateKey(context.tenantId, p.id, context.subject));
  let read: Awaited<ReturnType<typeof readFastStates>>;
  try {
    read = await readFastStates(redis, keys, idempotencyKey, guard);
  } catch (error) {
    if (!isBackendUnreachable(error)) throw error;
    const verdicts = policies.map((p) => degradedVerdict(context, p, requestedOf(p)));
    return { verdicts, recorded: null, degraded: true, generationMoved: false };
  }
  const verdicts = policies.map((policy, i) =>
    policy.kind === 'quota'
      ? fastQuotaVerdict(context, policy, requestedOf(policy), read.states[i]!)
      : fastBucketVerdict(context, policy, requestedOf(policy), read.states[i]!),
  );
  const generationMoved = read.generations.some((g, i) => g !== guard!.expected[i]);
  return { verdicts, recorded: read.recorded, degraded: false, generationMoved };
}

/**
 * Adds `delta` to one window of a fast quota policy (never below zero): a reservation's commit or
 * release. A window already over (its field gone) has nothing left to adjust.
 */
export async function adjustFastWindow(
  redis: Redis,
  key: { tenantId: string; policyId: string; subject: string },
  windowKey: string,
  delta: bigint,
): Promise<void> {
  const stateKey = fastStateKey(key.tenantId, key.policyId, key.subject);
  const field = windowField(windowKey);
  await untilUnmoved(async () => {
    const [state] = (await readFastStates(redis, [stateKey])).states;
    const current = state!.fields.get(field);
    if (current === undefined) return 'window over';
    const write: FastWrite = {
      key: stateKey,
      expectedVersion: state!.version,
      set: { [field]: maxOf(0n, BigInt(current) + delta).toString() },
      keep: null,
      expireAtMs: 'keep',
    };
    const partition = subjectPartition(key.tenantId, key.subject);
    const committed = await commitFastStates(redis, partition, [write], ulid());
    return committed === 'committed' ? 'adjusted' : MOVED;
  });
}

/** A fast quota policy's usage over the given windows' keys. */
export async function fastWindowUsed(
  redis: Redis,
  key: { tenantId: string; policyId: string; subject: string },
  windowKeys: string[],
): Promise<bigint> {
  const [state] = (
    await readFastStates(redis, [fastStateKey(key.tenantId, key.policyId, key.subject)])
  ).states;
  return windowKeys.reduce((sum, k) => sum + BigInt(state!.fields.get(windowField(k)) ?? '0'), 0n);
}
