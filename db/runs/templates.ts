import { UniqueIntegrityConstraintViolationError } from 'slonik';
import { z } from 'zod';
import { countRow, sql, type DatabasePool } from '../pool';

/**
 * Workflow templates in Postgres (migration runs/0009): a template row (its name, description and
 * latest version) and one template_versions row per published version. A deleted template keeps
 * its rows (workflows launched from it name it) but is found, listed and counted no more.
 */

type Queryable = Pick<DatabasePool, 'query' | 'one' | 'maybeOne' | 'any' | 'oneFirst' | 'anyFirst'>;
type Transactional = Queryable & Pick<DatabasePool, 'transaction'>;

export const templateRow = z.object({
  template_id: z.string(),
  tenant_id: z.string(),
  name: z.string().nullable(),
  description: z.string().nullable(),
  /** The latest version. */
  version: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TemplateRow = z.infer<typeof templateRow>;
const TEMPLATE_COLUMNS = sql.fragment`
  template_id, tenant_id, name, description, version, created_at, updated_at`;

export const templateVersionRow = z.object({
  template_id: z.string(),
  version: z.number(),
  /** The parameter declarations as accepted (services/runs/templates/params.ts). */
  params: z.array(z.unknown()),
  /** The definition as accepted: a workflow submit body with `${{ name }}` placeholders. */
  definition: z.record(z.unknown()),
  created_at: z.string(),
});
export type TemplateVersionRow = z.infer<typeof templateVersionRow>;

/** How a template is named in a path: by its id, or by its name. */
export type TemplateRef = { templateId: string } | { name: string };
const LIVE = sql.fragment`deleted_at IS NULL`;
const NAME_INDEX = 'templates_name';

const isNameTaken = (error: unknown) =>
  error instanceof UniqueIntegrityConstraintViolationError && error.constraint === NAME_INDEX;

const maxTemplatesRow = z.object({ max_templates: z.number() });

/**
 * Takes the tenant's quota row FOR UPDATE, so its template registrations are serialized (as its
 * workflow submits and webhook endpoints), and answers its max_templates and live templates.
 * Call it in the transaction that then inserts.
 */
export async function lockLiveTemplateCount(
  tx: Queryable,
  tenantId: string,
): Promise<{ max: number; live: number }> {
  const max = await tx.oneFirst(sql.type(maxTemplatesRow)`
    SELECT max_templates FROM runs.tenant_quotas WHERE tenant_id = ${tenantId} FOR UPDATE`);
  // A statement of its own: its snapshot is taken after the lock (see lockLiveEndpointCount).
  const live = await tx.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.templates WHERE tenant_id = ${tenantId} AND ${LIVE}`);
  return { max, live };
}

export interface NewTemplate {
  templateId: string;
  tenantId: string;
  name: string | null;
  description: string | null;
  params: unknown[];
  definition: Record<string, unknown>;
}

/** Inserts a template at version 1; `name_taken` (nothing written) when a live one has its name. */
export async function insertTemplate(
  tx: Transactional,
  t: NewTemplate,
): Promise<TemplateRow | 'name_taken'> {
  try {
    // A savepoint: a refused name leaves the caller's transaction usable.
    return await tx.transaction(async (inner) => {
      const row = await inner.one(sql.type(templateRow)`
        INSERT INTO runs.templates (template_id, tenant_id, name, description)
        VALUES (${t.templateId}, ${t.tenantId}, ${t.name}, ${t.description})
        RETURNING ${TEMPLATE_COLUMNS}`);
      await insertTemplateVersion(inner, t.templateId, 1, t.params, t.definition);
      return row;
    });
  } catch (error) {
    if (isNameTaken(error)) return 'name_taken';
    throw error;
  }
}

export async function insertTemplateVersion(
  tx: Queryable,
  templateId: string,
  version: number,
  params: unknown[],
  definition: Record<string, unknown>,
): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO runs.template_versions (template_id, version, params, definition)
    VALUES (${templateId}, ${version}, ${sql.jsonb(params as never)},
            ${sql.jsonb(definition as never)})`);
}

/**
 * The tenant's live template named by `ref`, else null (none, deleted, another tenant's).
 * `lock`: FOR UPDATE, so a PATCH, a DELETE and a version's publication are one at a time.
 */
export async function findTemplate(
  db: Queryable,
  tenantId: string,
  ref: TemplateRef,
  lock: 'update' | null = null,
): Promise<TemplateRow | null> {
  const match =
    'templateId' in ref
      ? sql.fragment`template_id = ${ref.templateId}`
      : sql.fragment`name = ${ref.name}`;
  return db.maybeOne(sql.type(templateRow)`
    SELECT ${TEMPLATE_COLUMNS} FROM runs.templates
    WHERE tenant_id = ${tenantId} AND ${match} AND ${LIVE}
    ${lock === 'update' ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
}

export async function findTemplateVersion(
  db: Queryable,
  templateId: string,
  version: number,
): Promise<TemplateVersionRow | null> {
  return db.maybeOne(sql.type(templateVersionRow)`
    SELECT template_id, version, params, definition, created_at FROM runs.template_versions
    WHERE template_id = ${templateId} AND version = ${version}`);
}

const versionRow = z.object({ version: z.number() });

/** A template's version numbers, oldest first. */
export async function templateVersionNumbers(
  db: Queryable,
  templateId: string,
): Promise<readonly number[]> {
  return db.anyFirst(sql.type(versionRow)`
    SELECT version FROM runs.template_versions WHERE template_id = ${templateId}
    ORDER BY version`);
}

/** The tenant's live templates, newest first (their ids are ULIDs). */
export async function listTemplates(
  db: Queryable,
  tenantId: string,
  page: { limit: number; offset: number },
): Promise<readonly TemplateRow[]> {
  return db.any(sql.type(templateRow)`
    SELECT ${TEMPLATE_COLUMNS} FROM runs.templates
    WHERE tenant_id = ${tenantId} AND ${LIVE}
    ORDER BY template_id DESC LIMIT ${page.limit} OFFSET ${page.offset}`);
}

/** What a PATCH changes of the template row; absent fields are left as they are. */
export interface TemplateChanges {
  name?: string | null;
  description?: string | null;
  /** A version just published (its template_versions row written in the same transaction). */
  version?: number;
}

/**
 * Applies `changes` to a live template (updated_at now); `name_taken` (nothing written) when a
 * live template of the tenant has the new name; null when the template is not live.
 */
export async function updateTemplate(
  tx: Transactional,
  tenantId: string,
  templateId: string,
  changes: TemplateChanges,
): Promise<TemplateRow | 'name_taken' | null> {
  const sets = [sql.fragment`updated_at = date_trunc('milliseconds', now())`];
  if ('name' in changes) sets.push(sql.fragment`name = ${changes.name ?? null}`);
  if ('description' in changes)
    sets.push(sql.fragment`description = ${changes.description ?? null}`);
  if (changes.version !== undefined) sets.push(sql.fragment`version = ${changes.version}`);
  try {
    return await tx.transaction(async (inner) =>
      inner.maybeOne(sql.type(templateRow)`
          UPDATE runs.templates SET ${sql.join(sets, sql.fragment`, `)}
          WHERE tenant_id = ${tenantId} AND template_id = ${templateId} AND ${LIVE}
          RETURNING ${TEMPLATE_COLUMNS}`),
    );
  } catch (error) {
    if (isNameTaken(error)) return 'name_taken';
    throw error;
  }
}

/** DELETE: the template is found, listed and counted no more; false when it was not live. */
export async function markTemplateDeleted(
  db: Queryable,
  tenantId: string,
  templateId: string,
): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    UPDATE runs.templates
    SET deleted_at = date_trunc('milliseconds', now()), updated_at = date_trunc('milliseconds', now())
    WHERE tenant_id = ${tenantId} AND template_id = ${templateId} AND ${LIVE}`);
  return result.rowCount === 1;
}
