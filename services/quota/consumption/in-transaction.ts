import type { EffectivePolicyRow } from '../../../db/quota/consumption';
import {
  commitFastStates,
  type FastCommitExtras,
  type GenerationGuard,
} from '../../../db/quota/fast-state';
import { CatalogueMoved } from '../catalogue-cache';
import type { Queryable } from '../../../db/quota/queryable';
import type { Redis } from '../../../db/redis';
import { decideFast, MOVED, untilUnmoved, type FastVerdict } from './fast-verdicts';
import { decideStrict, type StrictVerdict } from './strict-verdicts';
import type { DecisionContext, PolicyVerdict } from './verdicts';
import { subjectPartition } from '../../../db/quota/partitions';

/**
 * A request's decision over every policy that governs it, strict and fast together: strict ones
 * on Postgres rows locked in the transaction, fast ones on Redis state; admitted only if all
 * admit, and then applied all together (fast writes first: they are the step that can find its
 * state moved, which is decided again with the strict rows still locked).
 */
export interface Stores {
  tx: Queryable;
  redis: Redis;
}

export interface Decided {
  /** In policy id order, as the policies came. */
  verdicts: PolicyVerdict[];
  allowed: boolean;
  /** Redis could not be read: fast policies answered by their on_backend_error. */
  degraded: boolean;
  strict: StrictVerdict[];
  fast: FastVerdict[];
}

export const isFast = (policy: EffectivePolicyRow) => policy.enforcement_mode === 'fast';

/**
 * Every policy's verdict; with a guard, the fast policies' state is read with the catalogue
 * generations the request was judged by (CatalogueMoved when they moved).
 */
export async function decideAll(
  stores: Stores,
  context: DecisionContext,
  policies: EffectivePolicyRow[],
  amounts: Map<string, bigint>,
  guard?: GenerationGuard,
): Promise<Decided> {
  const strict = await decideStrict(
    stores.tx,
    context,
    policies.filter((p) => !isFast(p)),
    amounts,
  );
  const fastPolicies = policies.filter(isFast);
  const fast =
    fastPolicies.length > 0 || guard
      ? await decideFast(stores.redis, context, fastPolicies, amounts, undefined, guard)
      : { verdicts: [], degraded: false, generationMoved: false };
  if (fast.generationMoved) throw new CatalogueMoved();
  const byPolicy = new Map<string, PolicyVerdict>(
    [...strict, ...fast.verdicts].map((v) => [v.policy.id, v]),
  );
  const verdicts = policies.map((p) => byPolicy.get(p.id)!);
  return {
    verdicts,
    allowed: verdicts.every((v) => v.allowed),
    degraded: fast.degraded,
    strict,
    fast: fast.verdicts,
  };
}

/** The fast writes of a decision; none when it was degraded (Redis out of reach). */
export const fastWrites = (fast: FastVerdict[]) =>
  fast.flatMap((v) => (v.write === null ? [] : [v.write]));

/**
 * Decides and, when admitted, applies: the fast writes (with `extras`) if their state has not
 * moved, then the strict ones. A decision whose fast state moved is made again.
 */
export async function decideAndApply(
  stores: Stores,
  context: () => DecisionContext,
  policies: EffectivePolicyRow[],
  amounts: Map<string, bigint>,
  token: string,
  extras?: FastCommitExtras,
): Promise<Decided> {
  const { tenantId, subject } = context();
  const partition = subjectPartition(tenantId, subject);
  return untilUnmoved(async () => {
    const decided = await decideAll(stores, context(), policies, amounts);
    if (!decided.allowed) return decided;
    const writes = fastWrites(decided.fast);
    if (writes.length > 0 || extras)
      if ((await commitFastStates(stores.redis, partition, writes, token, extras)) !== 'committed')
        return MOVED;
    for (const verdict of decided.strict) await verdict.apply(stores.tx);
    return decided;
  });
}
