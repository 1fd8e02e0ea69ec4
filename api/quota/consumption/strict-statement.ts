import { decideStrictQuotas, type EffectivePolicyRow } from '../../../db/quota/consumption';
import { crossingUsages } from '../alerts/crossings';
import { CatalogueMoved, type CatalogueView } from '../catalogue-cache';
import type { Queryable } from '../../../db/quota/queryable';
import type { ConsumeBody } from './consume';
import { ledgerEntries } from './records';
import { ulid } from '../../../db/ids';
import { currentWindow, limitOf, quotaVerdict } from './verdicts';

/**
 * A consume governed by strict quota policies alone, without an idempotency key, decided in one
 * statement: the generations checked, each policy locked and read, decided, applied and written
 * to the ledger in one round trip (db/quota/functions/decide_strict_quotas.sql), where the general
 * path (consume.ts: a transaction of a statement per step) takes about eight. The verdicts are
 * made here from the usage it read, with the same arithmetic. Null when the admission would cross
 * an alert threshold: the general path decides it and records the crossing.
 */
export const decidedInOneStatement = (policies: EffectivePolicyRow[], body: ConsumeBody) =>
  policies.length > 0 &&
  !body.idempotency_key &&
  policies.every((p) => p.enforcement_mode === 'strict' && p.kind === 'quota');

export async function consumeInOneStatement(
  db: Queryable,
  request: {
    view: CatalogueView;
    body: ConsumeBody;
    policies: EffectivePolicyRow[];
    amounts: Map<string, bigint>;
  },
) {
  const { view, body, policies, amounts } = request;
  const eventId = `evt_${ulid()}`;
  const context = { tenantId: view.tenantId, subject: body.subject, nowMs: Date.now() };
  const decided = policies.map((policy) => {
    const window = currentWindow(policy, context.nowMs);
    const requested = amounts.get(policy.resource) ?? 0n;
    const limit = limitOf(policy);
    return { policy, window, requested, limit };
  });
  const reply = await decideStrictQuotas(db, {
    tenantId: view.tenantId,
    subject: body.subject,
    generations: view.generations,
    policies: decided.map(({ policy, window, requested, limit }) => ({
      policy_id: policy.id,
      window_key: window.currentKey,
      window_keys: window.keys,
      expires_at:
        window.currentExpiresMs === null ? null : new Date(window.currentExpiresMs).toISOString(),
      requested: requested.toString(),
      limit: limit.toString(),
      allow_overage: policy.on_exceed === 'allow_overage',
      thresholds: crossingUsages(view.catalogue.enabledAlertRules, policy, body.subject, limit).map(
        String,
      ),
    })),
    ledger: ledgerEntries(
      { tenantId: view.tenantId, eventId, subject: body.subject, body },
      amounts,
      'consume',
    ),
  });
  if (reply.status === 'moved') throw new CatalogueMoved();
  if (reply.status === 'crossing') return null;
  const verdicts = decided.map(({ policy, window, requested }, i) =>
    quotaVerdict(context, policy, window, BigInt(reply.used[i]!), requested),
  );
  const allowed = verdicts.every((v) => v.allowed);
  if (allowed !== reply.allowed) throw new Error('decide_strict_quotas and the verdicts disagree');
  return { verdicts, eventId };
}
