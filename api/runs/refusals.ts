import type { Context, Next } from 'koa';
import { isDomainError, type DomainError } from '../../platform/errors';
import { errorResponse } from '../http/error-response';
import { RUNS_ERRORS, type RefusalDetail } from '../../services/runs/errors';
import type { Logger } from '../../platform/logger';
import type { DatabasePool } from '../../db/pool';
import { insertAudit } from '../../db/runs/audit';
import { jsonbSafe } from '../../platform/jsonb';
import { principalOf } from './auth';

/**
 * Statuses of a refusal the tenant's audit log keeps (the spec: "operator actions and refusals
 * against the tenant"). 401 has no tenant; 404 is a lookup of something the tenant has not.
 */
const AUDITED_STATUSES = new Set([400, 403, 409, 413, 415, 422, 429]);

/**
 * Writes an audit record for each refusal of an authenticated request, in one place: the action
 * is the route's name (`run.submit`, `run.pause`, ...), the target its run, workflow, endpoint or delivery, the detail the
 * refusal's code, status and details. A failed write is logged; the client still gets its
 * refusal. Refusals made before the key is read (malformed JSON, an oversized body) name no
 * tenant and are not kept.
 */
export function auditRefusals(pool: DatabasePool) {
  return async function recordRefusal(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
    } catch (error) {
      if (isDomainError(error) && isAudited(error)) await record(pool, ctx, error);
      throw error;
    }
  };
}

const statusOf = (error: DomainError) => errorResponse(error, RUNS_ERRORS).status;

function isAudited(error: DomainError): boolean {
  const detail = error.details as RefusalDetail | undefined;
  return AUDITED_STATUSES.has(statusOf(error)) && detail?.audit !== false;
}

/** The resource in the path (ids in either case; stored as ULIDs are, upper case). */
const targetOf = (params: Record<string, string> | undefined): string | null =>
  (
    params?.track_id ??
    params?.workflow_id ??
    params?.endpoint_id ??
    params?.delivery_id
  )?.toUpperCase() ?? null;

async function record(pool: DatabasePool, ctx: Context, error: DomainError): Promise<void> {
  const principal = principalOf(ctx);
  const named = (ctx as Context & { _matchedRouteName?: string })._matchedRouteName;
  const { audit: _audit, ...details } = (error.details as RefusalDetail | undefined) ?? {};
  await insertAudit(pool, {
    tenantId: principal.tenantId,
    actor: principal.keyId,
    action: named ?? `${ctx.method} ${ctx.path}`,
    outcome: 'refused',
    target: targetOf(ctx.params as Record<string, string> | undefined),
    detail: jsonbSafe({
      reason: error.code,
      status: statusOf(error),
      message: error.message,
      ...details,
    }),
  }).catch((auditError: unknown) =>
    (ctx.state.log as Logger).error({ err: auditError }, 'audit of a refusal failed'),
  );
}
