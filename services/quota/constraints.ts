import type { KeyConstraints } from '../../db/quota/keys';
import type { Principal } from './credentials';
import { quotaError } from './errors';

/**
 * A key's constraints bound whom and what it acts on, on top of its scopes (spec: "Constraints
 * say to whom or on what"). Omitted or null: unconstrained on that axis.
 */
const violation = () => quotaError('constraint_violation');

/** `subject_prefix`: every subject a route or body names. */
export function checkSubject(principal: Principal, subject: string): void {
  const prefix = principal.constraints?.subject_prefix;
  if (prefix && !subject.startsWith(prefix)) throw violation();
}

/** `plan_ids`: the plans `assignments:write` may assign. */
export function checkPlan(principal: Principal, planId: string): void {
  const plans = principal.constraints?.plan_ids;
  if (plans && !plans.includes(planId)) throw violation();
}

/** `catalog_name_prefix`: the names of resources, policies and plans the key writes. */
export function checkCatalogName(principal: Principal, name: string): void {
  const prefix = principal.constraints?.catalog_name_prefix;
  if (prefix && !name.startsWith(prefix)) throw violation();
}

/** Whether `inner` bounds at least as tightly as `outer` on every axis. */
export function withinConstraints(
  outer: KeyConstraints | null,
  inner: KeyConstraints | null,
): boolean {
  const prefixWithin = (o?: string | null, i?: string | null) => !o || (!!i && i.startsWith(o));
  const plansWithin = (o?: string[] | null, i?: string[] | null) =>
    !o || (!!i && i.every((plan) => o.includes(plan)));
  return (
    prefixWithin(outer?.subject_prefix, inner?.subject_prefix) &&
    prefixWithin(outer?.catalog_name_prefix, inner?.catalog_name_prefix) &&
    plansWithin(outer?.plan_ids, inner?.plan_ids)
  );
}

/** Omitted axes as null, so a stored constraint set reads the same however it was sent. */
export function normalizeConstraints(
  constraints: KeyConstraints | null | undefined,
): KeyConstraints | null {
  if (!constraints) return null;
  const normal = {
    plan_ids: constraints.plan_ids ?? null,
    subject_prefix: constraints.subject_prefix ?? null,
    catalog_name_prefix: constraints.catalog_name_prefix ?? null,
  };
  return Object.values(normal).every((v) => v === null) ? null : normal;
}
