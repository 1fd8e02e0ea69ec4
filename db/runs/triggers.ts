import { z } from 'zod';
import { countRow, sql, type DatabasePool } from '../pool';

/**
 * Template triggers (migration runs/0013): the row a POST makes (under the tenant's
 * max_triggers, which counts enabled ones) and its fire ledger. Its Temporal Schedule
 * trigger/<trigger_id> decides when an occurrence is due; a fire launches the template, and the
 * workflow's (trigger_id, trigger_occurrence) key makes that once per occurrence.
 */

type Queryable = Pick<DatabasePool, 'query' | 'one' | 'maybeOne' | 'any' | 'oneFirst'>;

/** Why a trigger was disabled by a fire that could not launch (the table's CHECK). */
export const TRIGGER_DISABLED_REASONS = [
  'template_deleted',
  'invalid_params',
  'quota_exceeded',
  'key_revoked',
  'launch_refused',
] as const;
export type TriggerDisabledReason = (typeof TRIGGER_DISABLED_REASONS)[number];

export const TRIGGER_FIRE_OUTCOMES = ['launched', 'skipped_disabled', 'failed'] as const;
export type TriggerFireOutcome = (typeof TRIGGER_FIRE_OUTCOMES)[number];

export const triggerRow = z.object({
  trigger_id: z.string(),
  tenant_id: z.string(),
  template_id: z.string(),
  key_id: z.string(),
  cron: z.string(),
  timezone: z.string(),
  version: z.number().nullable(),
  params: z.record(z.string()),
  sealed_params: z.string().nullable(),
  secret_params: z.array(z.string()),
  enabled: z.boolean(),
  disabled_reason: z.enum(TRIGGER_DISABLED_REASONS).nullable(),
  disabled_detail: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TriggerRow = z.infer<typeof triggerRow>;
const TRIGGER_COLUMNS = sql.fragment`
  trigger_id, tenant_id, template_id, key_id, cron, timezone, version, params, sealed_params,
  secret_params, enabled, disabled_reason, disabled_detail, created_at, updated_at`;

export const triggerFireRow = z.object({
  occurrence: z.string(),
  wall_time: z.string(),
  fired_at: z.string(),
  /** numeric: a decimal string. */
  fire_delay_seconds: z.string(),
  outcome: z.enum(TRIGGER_FIRE_OUTCOMES),
  workflow_id: z.string().nullable(),
  error: z.string().nullable(),
});
export type TriggerFireRow = z.infer<typeof triggerFireRow>;
const FIRE_COLUMNS = sql.fragment`
  to_char(occurrence AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS occurrence,
  to_char(wall_time, 'YYYY-MM-DD"T"HH24:MI:SS') AS wall_time,
  fired_at, fire_delay_seconds::text, outcome, workflow_id, error`;
const NOW = sql.fragment`date_trunc('milliseconds', now())`;

/**
 * Takes the tenant's quota row FOR UPDATE, so its trigger creations and enablings are
 * serialized, and answers its max_triggers and enabled triggers.
 */
export async function lockEnabledTriggerCount(
  tx: Queryable,
  tenantId: string,
): Promise<{ max: number; enabled: number }> {
  const max = await tx.oneFirst(sql.type(z.object({ max_triggers: z.number() }))`
    SELECT max_triggers FROM runs.tenant_quotas WHERE tenant_id = ${tenantId}
    FOR UPDATE`);
  // A statement of its own: its snapshot is taken after the lock.
  const enabled = await tx.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.triggers WHERE tenant_id = ${tenantId} AND enabled`);
  return { max, enabled };
}

export interface NewTrigger {
  triggerId: string;
  tenantId: string;
  templateId: string;
  keyId: string;
  cron: string;
  timezone: string;
  version: number | null;
  params: TriggerParams;
  enabled: boolean;
}

/** A trigger's parameter values as stored: the plain ones, the secret ones sealed. */
export interface TriggerParams {
  plain: Record<string, string>;
  sealed: string | null;
  secretNames: string[];
}

export async function insertTrigger(tx: Queryable, t: NewTrigger): Promise<TriggerRow> {
  return tx.one(sql.type(triggerRow)`
    INSERT INTO runs.triggers (trigger_id, tenant_id, template_id, key_id, cron, timezone, version,
                               params, sealed_params, secret_params, enabled)
    VALUES (${t.triggerId}, ${t.tenantId}, ${t.templateId}, ${t.keyId}, ${t.cron}, ${t.timezone},
            ${t.version}, ${JSON.stringify(t.params.plain)}::jsonb, ${t.params.sealed},
            ${sql.array(t.params.secretNames, 'text')}, ${t.enabled})
    RETURNING ${TRIGGER_COLUMNS}`);
}

/** A tenant's trigger (null: none, or another tenant's); `lock` takes it FOR UPDATE. */
export async function findTrigger(
  db: Queryable,
  tenantId: string,
  triggerId: string,
  lock = false,
): Promise<TriggerRow | null> {
  return db.maybeOne(sql.type(triggerRow)`
    SELECT ${TRIGGER_COLUMNS} FROM runs.triggers
    WHERE trigger_id = ${triggerId} AND tenant_id = ${tenantId}
    ${lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
}

export interface TriggerFilter {
  templateId: string | null;
  limit: number;
  offset: number;
}

/** The tenant's triggers (of one template, or all), newest first. */
export async function listTriggers(
  db: Queryable,
  tenantId: string,
  filter: TriggerFilter,
): Promise<readonly TriggerRow[]> {
  const template = filter.templateId
    ? sql.fragment`AND template_id = ${filter.templateId}`
    : sql.fragment``;
  return db.any(sql.type(triggerRow)`
    SELECT ${TRIGGER_COLUMNS} FROM runs.triggers
    WHERE tenant_id = ${tenantId} ${template}
    ORDER BY trigger_id DESC LIMIT ${filter.limit} OFFSET ${filter.offset}`);
}

export interface TriggerChanges {
  cron?: string;
  timezone?: string;
  version?: number | null;
  params?: TriggerParams;
  /** Enabling clears the disable reason; a fire's refusal sets it (disableTrigger). */
  enabled?: boolean;
}

/** Applies the changes given; answers the row after them. */
export async function updateTrigger(
  tx: Queryable,
  triggerId: string,
  c: TriggerChanges,
): Promise<TriggerRow> {
  const sets = [sql.fragment`updated_at = ${NOW}`];
  if (c.cron !== undefined) sets.push(sql.fragment`cron = ${c.cron}`);
  if (c.timezone !== undefined) sets.push(sql.fragment`timezone = ${c.timezone}`);
  if (c.version !== undefined) sets.push(sql.fragment`version = ${c.version}`);
  if (c.params !== undefined)
    sets.push(sql.fragment`params = ${JSON.stringify(c.params.plain)}::jsonb,
      sealed_params = ${c.params.sealed},
      secret_params = ${sql.array(c.params.secretNames, 'text')}`);
  if (c.enabled !== undefined)
    sets.push(sql.fragment`enabled = ${c.enabled}, disabled_reason = NULL, disabled_detail = NULL`);
  return tx.one(sql.type(triggerRow)`
    UPDATE runs.triggers SET ${sql.join(sets, sql.fragment`, `)}
    WHERE trigger_id = ${triggerId}
    RETURNING ${TRIGGER_COLUMNS}`);
}

export async function deleteTrigger(tx: Queryable, triggerId: string): Promise<void> {
  await tx.query(sql.unsafe`DELETE FROM runs.triggers WHERE trigger_id = ${triggerId}`);
}

/** The trigger a fire is for, whatever its tenant (the fire's input names both). */
export async function findTriggerOfFire(
  db: Queryable,
  triggerId: string,
): Promise<TriggerRow | null> {
  return db.maybeOne(sql.type(triggerRow)`
    SELECT ${TRIGGER_COLUMNS} FROM runs.triggers WHERE trigger_id = ${triggerId}`);
}

export interface TriggerOccurrence {
  triggerId: string;
  occurrence: string;
  wallTime: string;
}

/** The fire already recorded for this occurrence or its wall time, if any. */
export async function findTriggerFire(
  db: Queryable,
  o: TriggerOccurrence,
): Promise<TriggerFireRow | null> {
  return db.maybeOne(sql.type(triggerFireRow)`
    SELECT ${FIRE_COLUMNS} FROM runs.trigger_fires
    WHERE trigger_id = ${o.triggerId}
      AND (occurrence = ${o.occurrence}::timestamptz OR wall_time = ${o.wallTime}::timestamp)
    LIMIT 1`);
}

const occurrenceWorkflowRow = z.object({ workflow_id: z.string() });

/** The workflow a fire of this occurrence launched (a retry after the launch committed). */
export async function workflowOfOccurrence(
  db: Queryable,
  o: TriggerOccurrence,
): Promise<string | null> {
  const row = await db.maybeOne(sql.type(occurrenceWorkflowRow)`
    SELECT workflow_id FROM runs.workflows
    WHERE trigger_id = ${o.triggerId} AND trigger_occurrence = ${o.occurrence}::timestamptz`);
  return row?.workflow_id ?? null;
}

export interface TriggerFireRecord extends TriggerOccurrence {
  outcome: TriggerFireOutcome;
  workflowId: string | null;
  error: string | null;
}

/** Writes the occurrence's ledger row once (a second fire of it writes nothing). */
export async function recordTriggerFire(
  db: Queryable,
  f: TriggerFireRecord,
): Promise<TriggerFireRow | null> {
  return db.maybeOne(sql.type(triggerFireRow)`
    INSERT INTO runs.trigger_fires (trigger_id, occurrence, wall_time, fired_at,
                                    fire_delay_seconds, outcome, workflow_id, error)
    SELECT ${f.triggerId}, o, ${f.wallTime}::timestamp, ${NOW},
           greatest(0, round(extract(epoch FROM ${NOW} - o)::numeric, 3)),
           ${f.outcome}, ${f.workflowId}, ${f.error}
    FROM (SELECT ${f.occurrence}::timestamptz AS o) occurrence
    ON CONFLICT DO NOTHING
    RETURNING ${FIRE_COLUMNS}`);
}

/** Disables the trigger for a refusal its fire met (PATCH enabled: true clears the reason). */
export async function disableTrigger(
  tx: Queryable,
  triggerId: string,
  reason: TriggerDisabledReason,
  detail: string,
): Promise<void> {
  await tx.query(sql.unsafe`
    UPDATE runs.triggers
    SET enabled = false, disabled_reason = ${reason}, disabled_detail = ${detail},
        updated_at = ${NOW}
    WHERE trigger_id = ${triggerId}`);
}

/** The trigger's fire ledger, newest occurrence first. */
export async function listTriggerFires(
  db: Queryable,
  triggerId: string,
  page: { limit: number; offset: number },
): Promise<readonly TriggerFireRow[]> {
  return db.any(sql.type(triggerFireRow)`
    SELECT ${FIRE_COLUMNS} FROM runs.trigger_fires WHERE trigger_id = ${triggerId}
    ORDER BY trigger_fires.occurrence DESC
    LIMIT ${page.limit} OFFSET ${page.offset}`);
}
