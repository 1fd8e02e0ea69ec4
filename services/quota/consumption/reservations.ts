import { ulid } from '../../../db/ids';
import {
  addToCounter,
  appendLedger,
  lockSubjectPolicy,
  readCounter,
} from '../../../db/quota/consumption';
import type { Queryable } from '../../../db/quota/queryable';
import {
  dueReservations,
  findReservation,
  insertReservation,
  settleReservation,
  type ReservationHold,
  type ReservationRow,
} from '../../../db/quota/reservations';
import { exactInteger, stringifyExact } from '../../../platform/exact-json';
import { checkSubject } from '../constraints';
import type { Principal } from '../credentials';
import { bodyRefusal, quotaError } from '../errors';
import { tenantOf } from '../keys';
import {
  amountsOf,
  contextOf,
  idempotent,
  judged,
  recordCrossings,
  usageOut,
  type Caller,
  type Deps,
  type SpendingDeps,
} from './consume';
import type { Item } from './request';
import { governingItems, governingPolicies } from './governing';
import type { CatalogueView } from '../catalogue-cache';
import { decideAndApply, isFast, type Stores } from './in-transaction';
import { ledgerEntries, storedMetadata } from './records';
import { adjustFastWindow, fastWindowUsed } from './fast-verdicts';
import { windowAt } from './windows';
import { limitOf, type PolicyVerdict } from './verdicts';

/**
 * Reservations: reserve holds amounts against the subject's quotas (decided as consume is: all or
 * nothing) until commit settles them with actuals, release gives them back, or they expire.
 * Statuses: held → committed | released | expired. A hold counts in the window it was made in;
 * commit and release adjust that window. Rate limits are paced at reserve (their tokens are not
 * given back). Expiry: commit and release see a reservation past expires_at as expired (and
 * release its hold then); the reservation-expiry job releases the rest within a minute.
 */

export interface ReserveBody {
  subject: string;
  items: Item[];
  ttl_seconds: number;
  idempotency_key?: string | null;
  metadata?: Record<string, unknown>;
}

const itemsOut = (row: ReservationRow) =>
  row.items.map((i) => ({ resource: i.resource, amount: exactInteger(BigInt(i.amount)) }));

/** ReservationOut. */
export const reservationOut = (row: ReservationRow) => ({
  reservation_id: row.id,
  subject: row.subject,
  status: row.status,
  items: itemsOut(row),
  expires_at: row.expires_at,
  event_id: row.event_id,
  settle_event_id: row.settle_event_id,
  adjustments: row.adjustments,
  created_at: row.created_at,
  settled_at: row.settled_at,
});

export async function reserve(deps: SpendingDeps, caller: Caller, body: ReserveBody) {
  const amounts = amountsOf(body.items);
  return judged(deps, caller, body.subject, (view) => reserveJudged(deps, view, body, amounts));
}

async function reserveJudged(
  deps: SpendingDeps,
  view: CatalogueView,
  body: ReserveBody,
  amounts: Map<string, bigint>,
) {
  const { tenantId } = view;
  const policies = governingItems(view, body.items);
  const rules = view.catalogue.enabledAlertRules;
  return idempotent(deps, { tenantId, endpoint: 'reserve', view }, body, async (tx) => {
    const eventId = `evt_${ulid()}`;
    const context = contextOf(tenantId, body.subject);
    const decided = await decideAndApply(
      { tx, redis: deps.redis },
      context,
      policies,
      amounts,
      eventId,
    );
    const results = decided.verdicts.map(usageOut);
    if (!decided.allowed)
      return {
        allowed: false,
        reservation_id: null,
        status: null,
        expires_at: null,
        event_id: eventId,
        degraded: decided.degraded,
        results,
      };
    const holds: ReservationHold[] = decided.verdicts
      .filter((v) => v.window !== null)
      .map((v) => ({
        policy_id: v.policy.id,
        resource: v.policy.resource,
        window_key: v.window!.currentKey,
        ...(isFast(v.policy) ? { mode: 'fast' as const } : {}),
      }));
    const row = await insertReservation(tx, {
      id: `rsv_${ulid()}`,
      tenant_id: tenantId,
      subject: body.subject,
      items: [...amounts].map(([resource, amount]) => ({ resource, amount: amount.toString() })),
      holds,
      event_id: eventId,
      ttlSeconds: body.ttl_seconds,
      metadata: storedMetadata(body.metadata),
    });
    await appendLedger(
      tx,
      ledgerEntries(
        { tenantId, eventId, subject: body.subject, body, reservationId: row.id },
        amounts,
        'reserve',
      ),
    );
    // A hold is usage: a reserve crosses thresholds as a consume does.
    await recordCrossings(tx, deps, rules, context(), decided.verdicts);
    return {
      allowed: true,
      reservation_id: row.id,
      status: row.status,
      expires_at: row.expires_at,
      event_id: eventId,
      degraded: decided.degraded,
      results,
    };
  });
}

/**
 * Adds `delta` per resource to the windows the reservation's hold was counted in: counter rows
 * in Postgres, or the subject's state in Redis for a fast policy (a hold of before fast mode
 * has no mode: strict).
 */
async function adjustHolds(stores: Stores, row: ReservationRow, delta: Map<string, bigint>) {
  const holds = [...row.holds].sort((a, b) => a.policy_id.localeCompare(b.policy_id));
  for (const hold of holds) {
    const key = {
      tenantId: row.tenant_id,
      subject: row.subject,
      policyId: hold.policy_id,
      windowKey: hold.window_key,
    };
    const amount = delta.get(hold.resource) ?? 0n;
    if (hold.mode === 'fast') {
      await adjustFastWindow(stores.redis, key, hold.window_key, amount);
      continue;
    }
    await lockSubjectPolicy(stores.tx, key);
    await addToCounter(stores.tx, key, amount);
  }
}

const heldOf = (row: ReservationRow) =>
  new Map(row.items.map((i) => [i.resource, BigInt(i.amount)]));
const negate = (amounts: Map<string, bigint>) => new Map([...amounts].map(([r, a]) => [r, -a]));

/** Gives a held reservation's amounts back and settles it (released or expired). */
async function giveBack(stores: Stores, row: ReservationRow, status: 'released' | 'expired') {
  const { tx } = stores;
  const back = negate(heldOf(row));
  await adjustHolds(stores, row, back);
  const eventId = `evt_${ulid()}`;
  await appendLedger(
    tx,
    ledgerEntries(
      { tenantId: row.tenant_id, eventId, subject: row.subject, body: {}, reservationId: row.id },
      back,
      status === 'released' ? 'release' : 'expire',
    ),
  );
  return settleReservation(tx, row.id, { status, eventId });
}

/** Expires a held reservation past its expires_at (by the database's clock); true if it did. */
export async function expireIfDue(
  deps: Pick<Deps, 'pool' | 'redis'>,
  tenantId: string | null,
  id: string,
): Promise<boolean> {
  return deps.pool.transaction(async (tx) => {
    const row = await findReservation(tx, tenantId, id, { lock: true });
    if (!row || row.status !== 'held' || !row.due) return false;
    await giveBack({ tx, redis: deps.redis }, row, 'expired');
    return true;
  });
}

/** The reservation-expiry job: every held reservation past expires_at, each in its own transaction. */
export async function expireDueReservations(
  deps: Pick<Deps, 'pool' | 'redis'>,
  batch = 500,
): Promise<{ expired: number }> {
  let expired = 0;
  for (;;) {
    const ids = await dueReservations(deps.pool, batch);
    for (const id of ids) if (await expireIfDue(deps, null, id)) expired++;
    if (ids.length < batch) return { expired };
  }
}

async function lockedReservation(tx: Queryable, tenantId: string, id: string) {
  const row = await findReservation(tx, tenantId, id, { lock: true });
  if (!row) throw quotaError('reservation_not_found');
  return row;
}

function refuseSettled(row: ReservationRow): void {
  if (row.status === 'expired') throw quotaError('reservation_expired');
  if (row.status !== 'held') throw quotaError('reservation_settled');
}

export async function getReservation(deps: Deps, principal: Principal, id: string) {
  const row = await findReservation(deps.pool, tenantOf(principal), id);
  if (!row) throw quotaError('reservation_not_found');
  return reservationOut(row);
}

export interface CommitBody {
  actuals: Item[];
  idempotency_key?: string | null;
}

/** The actual per resource: as given, else what was held; a resource not reserved is a 422. */
function actualsOf(row: ReservationRow, actuals: Item[]): Map<string, bigint> {
  const held = heldOf(row);
  const refusals = actuals.flatMap((actual, index) =>
    held.has(actual.resource)
      ? []
      : [
          {
            path: ['actuals', index, 'resource'],
            message: 'not a resource of this reservation',
            type: 'not_reserved',
          },
        ],
  );
  if (refusals.length > 0) throw bodyRefusal(refusals);
  const given = new Map(actuals.map((a) => [a.resource, BigInt(a.amount)]));
  return new Map([...held].map(([resource, amount]) => [resource, given.get(resource) ?? amount]));
}

/**
 * What the extra of a commit did to each quota of its resources in the current window: how far
 * past the limit it went (0 when it stayed within), and its usage as verdicts (an extra is
 * admitted: the work is done), for the alert rules to judge. An extra counted in a window
 * since ended (the hold's) crosses nothing now.
 */
async function extraUsage(
  stores: Stores,
  view: CatalogueView,
  row: ReservationRow,
  delta: Map<string, bigint>,
) {
  const policies = governingPolicies(view, new Set(delta.keys()));
  const over = new Map<string, bigint>();
  const verdicts: PolicyVerdict[] = [];
  for (const policy of policies.filter((p) => p.kind === 'quota')) {
    const extra = delta.get(policy.resource) ?? 0n;
    if (extra <= 0n) continue;
    const window = windowAt(policy as Parameters<typeof windowAt>[0], Date.now());
    const key = { tenantId: row.tenant_id, subject: row.subject, policyId: policy.id };
    const used = isFast(policy)
      ? await fastWindowUsed(stores.redis, key, window.keys)
      : BigInt(await readCounter(stores.tx, key, window.keys));
    const limit = limitOf(policy);
    const past = (u: bigint) => (u > limit ? u - limit : 0n);
    const overage = past(used) - past(used - extra);
    if (overage > (over.get(policy.resource) ?? 0n)) over.set(policy.resource, overage);
    const held = row.holds.find((h) => h.policy_id === policy.id);
    if (held?.window_key === window.currentKey)
      verdicts.push({
        policy,
        requested: extra,
        allowed: true,
        limit,
        used,
        remaining: used < limit ? limit - used : 0n,
        overage,
        window,
        retryAfterMs: null,
      });
  }
  return { over, verdicts };
}

/**
 * Settles a held reservation with its actuals: each resource's usage moves by actual - held (a
 * commit is never refused for exceeding: the work is done; `overage` says how far past a limit
 * it went). Past expires_at it is expired (its hold released) and refused 409.
 */
export async function commit(
  deps: SpendingDeps,
  principal: Principal,
  id: string,
  body: CommitBody,
) {
  const tenantId = tenantOf(principal);
  const expired = await expireIfDue(deps, tenantId, id);
  const reserved = await findReservation(deps.pool, tenantId, id);
  if (!reserved) throw quotaError('reservation_not_found');
  const view = await deps.catalogues.currentView(tenantId, reserved.subject);
  return idempotent(
    deps,
    { tenantId, endpoint: 'commit' },
    { ...body, idempotency_key: body.idempotency_key && `${id}/${body.idempotency_key}` },
    async (tx) => {
      const row = await lockedReservation(tx, tenantId, id);
      checkSubject(principal, row.subject);
      if (expired) throw quotaError('reservation_expired');
      refuseSettled(row);
      const held = heldOf(row);
      const actual = actualsOf(row, body.actuals);
      const delta = new Map(
        [...actual].map(([resource, amount]) => [resource, amount - held.get(resource)!]),
      );
      await adjustHolds({ tx, redis: deps.redis }, row, delta);
      const stores = { tx, redis: deps.redis };
      const { over, verdicts } = await extraUsage(stores, view, row, delta);
      // An actual past the hold adds usage: it crosses thresholds as a consume does.
      const rules = view.catalogue.enabledAlertRules;
      await recordCrossings(tx, deps, rules, contextOf(tenantId, row.subject)(), verdicts);
      const eventId = `evt_${ulid()}`;
      await appendLedger(
        tx,
        ledgerEntries(
          { tenantId, eventId, subject: row.subject, body, reservationId: id },
          delta,
          'commit',
        ),
      );
      const adjustments = [...actual].map(([resource, amount]) => ({
        resource,
        held: exactInteger(held.get(resource)!),
        actual: exactInteger(amount),
        delta: exactInteger(delta.get(resource)!),
        overage: exactInteger(over.get(resource) ?? 0n),
      }));
      const settled = await settleReservation(tx, id, {
        status: 'committed',
        eventId,
        adjustmentsJson: stringifyExact(adjustments),
      });
      return {
        reservation_id: id,
        status: settled.status,
        event_id: eventId,
        degraded: false,
        adjustments,
      };
    },
  );
}

/** Gives a held reservation back. Releasing a released one answers it as it is. */
export async function release(deps: Deps, principal: Principal, id: string) {
  const tenantId = tenantOf(principal);
  if (await expireIfDue(deps, tenantId, id)) throw quotaError('reservation_expired');
  return deps.pool.transaction(async (tx) => {
    let row = await lockedReservation(tx, tenantId, id);
    checkSubject(principal, row.subject);
    if (row.status !== 'released') {
      refuseSettled(row);
      row = await giveBack({ tx, redis: deps.redis }, row, 'released');
    }
    return {
      reservation_id: id,
      status: row.status,
      event_id: row.settle_event_id,
      released: itemsOut(row),
    };
  });
}
