import {
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type ScheduleOptions,
  type ScheduleUpdateOptions,
} from '@temporalio/client';
import { ulid } from '../../../db/ids';
import type { Tx } from '../../../db/pool';
import { auditOf } from '../audit';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import {
  deleteTrigger as deleteTriggerRow,
  findTrigger,
  insertTrigger,
  listTriggerFires,
  listTriggers,
  lockEnabledTriggerCount,
  updateTrigger,
  type TriggerChanges,
  type TriggerParams,
  type TriggerRow,
} from '../../../db/runs/triggers';
import { executionSearchAttributes } from '../../../contracts/shared/search-attributes';
import { triggerFireSummary } from '../../../contracts/runs/summaries';
import {
  TRIGGER_FIRE_WORKFLOW_TYPE,
  triggerFireWorkflowIdBase,
  triggerTemporalId,
  type TriggerFireWorkflowInput,
} from '../../../contracts/runs/trigger-fire';
import type { PlatformDeps } from '../../../platform/deps';
import { runsError } from '../errors';
import { SCHEDULE_CATCHUP_WINDOW } from '../schedules/schedules';
import {
  assertCronAndZone,
  cronSpecOf,
  nextActionTime,
  scheduleUnavailable,
} from '../schedules/temporal-schedule';
import { resolveParams, type TemplateParam } from '../templates/params';
import { loadTemplate, loadVersion } from '../templates/service';
import { runsQueue } from '../webhooks/starter';
import { presentTrigger, presentTriggerFire } from './models';
import { openTriggerParams, sealTriggerParams } from './params';

/**
 * A tenant's template triggers: each row has one Temporal Schedule trigger/<trigger_id>, changed
 * in the transaction that changes the row (a Temporal refusal rolls it back: 503
 * schedule_unavailable). Its parameters are checked against the template version a fire would
 * launch whenever they or the version change. max_triggers counts enabled triggers, under a lock
 * on the tenant's quota row. Each change is audited (trigger.create|update|delete).
 */

type Deps = Pick<PlatformDeps, 'pool' | 'config' | 'temporal' | 'logger'>;

export interface TriggerCreateBody {
  cron: string;
  timezone: string;
  params: Record<string, string>;
  version: number | null;
  enabled: boolean;
}
export type TriggerPatchBody = Partial<TriggerCreateBody>;

const notFound = () => runsError('trigger_not_found');

const audit = auditOf('trigger');

/** The Temporal Schedule of a row: paused while disabled, and paused by a fire that fails. */
function triggerScheduleOptions(
  deps: Deps,
  row: TriggerRow,
): Omit<ScheduleOptions, 'scheduleId'> & ScheduleUpdateOptions {
  const input: TriggerFireWorkflowInput = {
    triggerId: row.trigger_id,
    tenantId: row.tenant_id,
    cron: row.cron,
    timezone: row.timezone,
  };
  const note = row.disabled_reason
    ? `disabled: ${row.disabled_reason}`
    : 'disabled via the runs API';
  return {
    spec: cronSpecOf(row.cron, row.timezone),
    action: {
      type: 'startWorkflow',
      workflowType: TRIGGER_FIRE_WORKFLOW_TYPE,
      workflowId: triggerFireWorkflowIdBase(row.trigger_id),
      taskQueue: runsQueue(deps),
      args: [input],
      typedSearchAttributes: executionSearchAttributes(row.tenant_id, 'runs'),
      ...triggerFireSummary({ ...input, templateId: row.template_id }),
    },
    policies: {
      overlap: ScheduleOverlapPolicy.ALLOW_ALL,
      catchupWindow: SCHEDULE_CATCHUP_WINDOW,
      pauseOnFailure: true,
    },
    state: { paused: !row.enabled, note: row.enabled ? undefined : note },
    typedSearchAttributes: executionSearchAttributes(row.tenant_id, 'runs'),
  };
}

const unavailable = (deps: Deps, error: unknown, triggerId: string) =>
  scheduleUnavailable(deps, error, triggerTemporalId(triggerId));

async function present(deps: Deps, row: TriggerRow) {
  const next = row.enabled ? await nextActionTime(deps, triggerTemporalId(row.trigger_id)) : null;
  return presentTrigger(row, row.secret_params, next);
}

async function assertSlot(tx: Tx, tenantId: string): Promise<void> {
  const { max, enabled } = await lockEnabledTriggerCount(tx, tenantId);
  if (enabled >= max) throw runsError('trigger_quota_exceeded', { details: { max_triggers: max } });
}

/**
 * The values checked against the version a fire would launch (the pinned one, else the latest:
 * 404 when gone, 422 per parameter), as stored.
 */
async function checkedParams(
  deps: Deps,
  db: Parameters<typeof loadTemplate>[0],
  tenantId: string,
  templateRef: string,
  triggerId: string,
  launch: { version: number | null; params: Record<string, string> },
): Promise<{ templateId: string; params: TriggerParams }> {
  const template = await loadTemplate(db, tenantId, templateRef);
  const version = await loadVersion(db, template, launch.version ?? template.version);
  const declared = version.params as TemplateParam[];
  resolveParams(declared, launch.params);
  const params = sealTriggerParams(deps.config.runs.secretsKey, triggerId, declared, launch.params);
  return { templateId: template.template_id, params };
}

/** Creates a trigger and its Temporal Schedule, all or nothing. */
export async function createTrigger(
  deps: Deps,
  principal: KeyPrincipal,
  templateRef: string,
  body: TriggerCreateBody,
) {
  assertCronAndZone(body);
  const triggerId = ulid();
  const { templateId, params } = await checkedParams(
    deps,
    deps.pool,
    principal.tenantId,
    templateRef,
    triggerId,
    body,
  );
  const row = await deps.pool.transaction(async (tx) => {
    if (body.enabled) await assertSlot(tx, principal.tenantId);
    const created = await insertTrigger(tx, {
      triggerId,
      tenantId: principal.tenantId,
      templateId,
      keyId: principal.keyId,
      cron: body.cron,
      timezone: body.timezone,
      version: body.version,
      params,
      enabled: body.enabled,
    });
    await audit(tx, principal, 'create', triggerId, {
      template_id: templateId,
      cron: body.cron,
      timezone: body.timezone,
      version: body.version,
      params: Object.keys(body.params).sort(),
    });
    try {
      await deps.temporal.schedule.create({
        scheduleId: triggerTemporalId(triggerId),
        ...triggerScheduleOptions(deps, created),
      });
    } catch (error) {
      throw unavailable(deps, error, triggerId);
    }
    return created;
  });
  return present(deps, row);
}

export async function getTrigger(deps: Deps, tenantId: string, triggerId: string) {
  const row = await findTrigger(deps.pool, tenantId, triggerId);
  if (!row) throw notFound();
  return present(deps, row);
}

/** The tenant's triggers, or those of one template (404 when it is not the tenant's). */
export async function listTenantTriggers(
  deps: Deps,
  tenantId: string,
  templateRef: string | null,
  page: { limit: number; offset: number },
) {
  const templateId = templateRef
    ? (await loadTemplate(deps.pool, tenantId, templateRef)).template_id
    : null;
  const rows = await listTriggers(deps.pool, tenantId, { templateId, ...page });
  return { triggers: await Promise.all(rows.map((row) => present(deps, row))), ...page };
}

/**
 * Changes a trigger and its Temporal Schedule together (the row locked, the Temporal update made
 * before the commit). New params or a new version are checked against the template (the other
 * kept as it is). Enabling takes a max_triggers slot and clears the disable reason.
 */
export async function patchTrigger(
  deps: Deps,
  principal: KeyPrincipal,
  triggerId: string,
  body: TriggerPatchBody,
) {
  assertCronAndZone(body);
  const row = await deps.pool.transaction(async (tx) => {
    const before = await findTrigger(tx, principal.tenantId, triggerId, true);
    if (!before) throw notFound();
    const changes: TriggerChanges = {
      cron: body.cron,
      timezone: body.timezone,
      version: body.version,
      enabled: body.enabled,
    };
    if (body.params !== undefined || body.version !== undefined) {
      const launch = {
        version: body.version === undefined ? before.version : body.version,
        params: body.params ?? openTriggerParams(deps.config.runs.secretsKey, before),
      };
      const checked = await checkedParams(
        deps,
        tx,
        principal.tenantId,
        before.template_id,
        triggerId,
        launch,
      );
      changes.params = checked.params;
    }
    if (body.enabled === true && !before.enabled) await assertSlot(tx, principal.tenantId);
    const after = await updateTrigger(tx, triggerId, changes);
    await audit(tx, principal, 'update', triggerId, {
      fields: Object.keys(body).sort(),
      enabled: after.enabled,
    });
    try {
      await deps.temporal.schedule
        .getHandle(triggerTemporalId(triggerId))
        .update(() => triggerScheduleOptions(deps, after));
    } catch (error) {
      throw unavailable(deps, error, triggerId);
    }
    return after;
  });
  return present(deps, row);
}

/** Deletes the trigger, its fire ledger and its Temporal Schedule (one already gone is fine). */
export async function deleteTrigger(deps: Deps, principal: KeyPrincipal, triggerId: string) {
  await deps.pool.transaction(async (tx) => {
    if (!(await findTrigger(tx, principal.tenantId, triggerId, true))) throw notFound();
    await deleteTriggerRow(tx, triggerId);
    await audit(tx, principal, 'delete', triggerId);
    try {
      await deps.temporal.schedule.getHandle(triggerTemporalId(triggerId)).delete();
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw unavailable(deps, error, triggerId);
    }
  });
}

export async function listFires(
  deps: Deps,
  tenantId: string,
  triggerId: string,
  page: { limit: number; offset: number },
) {
  if (!(await findTrigger(deps.pool, tenantId, triggerId))) throw notFound();
  const fires = await listTriggerFires(deps.pool, triggerId, page);
  return { fires: fires.map(presentTriggerFire), ...page };
}
