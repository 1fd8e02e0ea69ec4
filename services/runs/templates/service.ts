import { ulid } from '../../../db/ids';
import type { Tx } from '../../../db/pool';
import { auditOf } from '../audit';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import {
  findTemplate,
  findTemplateVersion,
  insertTemplate,
  insertTemplateVersion,
  listTemplates,
  lockLiveTemplateCount,
  markTemplateDeleted,
  templateVersionNumbers,
  updateTemplate,
  type TemplateChanges,
  type TemplateRef,
  type TemplateRow,
  type TemplateVersionRow,
} from '../../../db/runs/templates';
import { encryptWorkflowSecret } from '../../../platform/secrets';
import type { PlatformDeps } from '../../../platform/deps';
import { runsError } from '../errors';
import type { DagStarter } from '../dags/starter';
import { submitWorkflow, type TemplateLaunch } from '../dags/submit';
import type { MeteringDeps } from '../metering';
import type { InlineWebhookBody } from '../webhooks/inline';
import { assertDefinition, runDefinition } from './definition';
import { assertDeclarations, presentParam, resolveParams, type TemplateParam } from './params';
import { redactDefinition, secretsUsed } from './substitution';

/**
 * A tenant's workflow templates: register, read, change (a new definition or params publishes a
 * version), delete, and run (a workflow submit of the substituted definition, by submitWorkflow).
 * Each change is audited (template.create|update|delete|run) in the transaction that makes it,
 * never with a parameter's value.
 */

/** Versions one template may publish: past it, register a new template (409). */
export const TEMPLATE_VERSIONS_MAX = 100;
/**
 * A template id in a path: a ULID (any case) whose first character is 0-7, as every ULID's is;
 * a name starts with a letter, so no ref is both.
 */
const TEMPLATE_ID = /^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$/;
export const TEMPLATE_NAME_PATTERN = /^[a-z][a-z0-9-]{1,62}$/;

type Deps = Pick<PlatformDeps, 'pool' | 'config'>;

export interface TemplateCreate {
  name: string | null;
  description: string | null;
  params: TemplateParam[];
  definition: Record<string, unknown>;
}

/** A PATCH: at least one field (its schema); params or definition publish a version. */
export interface TemplatePatch {
  name?: string | null;
  description?: string | null;
  params?: TemplateParam[];
  definition?: Record<string, unknown>;
}

/** A run's body as its schema accepted it. */
export interface TemplateRunBody {
  params: Record<string, string>;
  version?: number;
  name?: string | null;
  tags: string[];
  scheduled_start: string | null;
  webhook?: InlineWebhookBody;
}

/** A ref as looked up; null: neither an id nor a name (404 without a lookup). */
export const templateRefOf = (ref: string): TemplateRef | null => {
  if (TEMPLATE_ID.test(ref)) return { templateId: ref.toUpperCase() };
  return TEMPLATE_NAME_PATTERN.test(ref) ? { name: ref } : null;
};

const notFound = () => runsError('template_not_found');
const nameTaken = (name: string | null | undefined) =>
  runsError('template_name_taken', { details: { name } });

const audit = auditOf('template');

/** A version as it may be stored: its declarations, then its definition against them. */
function assertVersion(params: TemplateParam[], definition: Record<string, unknown>): void {
  assertDeclarations(params);
  assertDefinition(definition, params);
}

/** A template as a read shows it: the version asked for, its definition redacted. */
function presentTemplate(
  template: TemplateRow,
  version: TemplateVersionRow,
  versions: readonly number[],
) {
  return {
    template_id: template.template_id,
    name: template.name,
    description: template.description,
    version: version.version,
    latest_version: template.version,
    versions,
    params: (version.params as TemplateParam[]).map(presentParam),
    definition: redactDefinition(version.definition),
    created_at: template.created_at,
    updated_at: template.updated_at,
  };
}

const presentSummary = (t: TemplateRow) => ({
  template_id: t.template_id,
  name: t.name,
  description: t.description,
  version: t.version,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

/**
 * Registers a template at version 1, unless the tenant already has max_templates (429): counted
 * and inserted under its quota row's lock, so two registrations cannot both take the last slot.
 */
export async function registerTemplate(deps: Deps, principal: KeyPrincipal, body: TemplateCreate) {
  assertVersion(body.params, body.definition);
  return deps.pool.transaction(async (tx) => {
    const { max, live } = await lockLiveTemplateCount(tx, principal.tenantId);
    if (live >= max)
      throw runsError('template_quota_exceeded', { details: { max_templates: max } });
    const created = await insertTemplate(tx, {
      templateId: ulid(),
      tenantId: principal.tenantId,
      name: body.name,
      description: body.description,
      params: body.params,
      definition: body.definition,
    });
    if (created === 'name_taken') throw nameTaken(body.name);
    await audit(tx, principal, 'create', created.template_id, { name: body.name, version: 1 });
    const version: TemplateVersionRow = {
      template_id: created.template_id,
      version: 1,
      params: body.params,
      definition: body.definition,
      created_at: created.created_at,
    };
    return presentTemplate(created, version, [1]);
  });
}

export async function listTenantTemplates(
  deps: Deps,
  tenantId: string,
  page: { limit: number; offset: number },
) {
  const templates = await listTemplates(deps.pool, tenantId, page);
  return { templates: templates.map(presentSummary), limit: page.limit, offset: page.offset };
}

export async function loadTemplate(
  db: Parameters<typeof findTemplate>[0],
  tenantId: string,
  ref: string,
  lock: 'update' | null = null,
): Promise<TemplateRow> {
  const found = templateRefOf(ref);
  const template = found && (await findTemplate(db, tenantId, found, lock));
  if (!template) throw notFound();
  return template;
}

export async function loadVersion(
  db: Parameters<typeof findTemplateVersion>[0],
  template: TemplateRow,
  version: number,
): Promise<TemplateVersionRow> {
  const row = await findTemplateVersion(db, template.template_id, version);
  if (!row)
    throw runsError('template_version_not_found', {
      details: { version, latest_version: template.version },
    });
  return row;
}

/** The template (by id or name), at its latest version or the one asked for. */
export async function getTemplate(deps: Deps, tenantId: string, ref: string, version?: number) {
  const template = await loadTemplate(deps.pool, tenantId, ref);
  const [shown, versions] = await Promise.all([
    loadVersion(deps.pool, template, version ?? template.version),
    templateVersionNumbers(deps.pool, template.template_id),
  ]);
  return presentTemplate(template, shown, versions);
}

/**
 * Renames or describes the template; new params or a new definition (or both) publish the next
 * version, the other part carried over from the latest and judged with it. One change at a time
 * per template (its row locked).
 */
export async function patchTemplate(
  deps: Deps,
  principal: KeyPrincipal,
  ref: string,
  patch: TemplatePatch,
) {
  return deps.pool.transaction(async (tx) => {
    const template = await loadTemplate(tx, principal.tenantId, ref, 'update');
    const changes: TemplateChanges = {};
    if (patch.name !== undefined) changes.name = patch.name;
    if (patch.description !== undefined) changes.description = patch.description;
    const publishes = patch.params !== undefined || patch.definition !== undefined;
    if (publishes) changes.version = await publishVersion(tx, template, patch);
    const updated = await updateTemplate(tx, principal.tenantId, template.template_id, changes);
    if (updated === 'name_taken') throw nameTaken(patch.name);
    if (updated === null) throw notFound();
    await audit(tx, principal, 'update', template.template_id, {
      fields: Object.keys(patch),
      version: updated.version,
    });
    const [shown, versions] = await Promise.all([
      loadVersion(tx, updated, updated.version),
      templateVersionNumbers(tx, template.template_id),
    ]);
    return presentTemplate(updated, shown, versions);
  });
}

/** Writes the template's next version (the patch over its latest); answers its number. */
async function publishVersion(
  tx: Tx,
  template: TemplateRow,
  patch: TemplatePatch,
): Promise<number> {
  if (template.version >= TEMPLATE_VERSIONS_MAX)
    throw runsError('template_version_limit', {
      details: { max_versions: TEMPLATE_VERSIONS_MAX },
    });
  const latest = await loadVersion(tx, template, template.version);
  const params = patch.params ?? (latest.params as TemplateParam[]);
  const definition = patch.definition ?? latest.definition;
  assertVersion(params, definition);
  const next = template.version + 1;
  await insertTemplateVersion(tx, template.template_id, next, params, definition);
  return next;
}

/** Frees the name and the quota slot; workflows launched from it are not touched. */
export async function deleteTemplate(deps: Deps, principal: KeyPrincipal, ref: string) {
  await deps.pool.transaction(async (tx) => {
    const template = await loadTemplate(tx, principal.tenantId, ref, 'update');
    await markTemplateDeleted(tx, principal.tenantId, template.template_id);
    await audit(tx, principal, 'delete', template.template_id, { name: template.name });
  });
}

/** A deferred start as stored: a past instant is now; none: as soon as possible. */
const clampedStart = (instant: string | null): string | null =>
  instant === null ? null : new Date(Math.max(Date.parse(instant), Date.now())).toISOString();

/**
 * Runs the template (latest or pinned version): its parameters resolved (422s), the definition
 * substituted and judged by the submit schema (422), its secrets' key at hand (503), then the
 * workflow submit's own path (graph, images, clamping, metering, quotas): nothing is stored
 * before every check has passed. Secret values are stored encrypted with the workflow, for the
 * engine; their placeholders stay in the node specs.
 */
export async function runTemplate(
  deps: Deps & MeteringDeps,
  starter: Pick<DagStarter, 'startInBackground'>,
  principal: KeyPrincipal,
  ref: string,
  body: TemplateRunBody,
  trigger?: { triggerId: string; occurrence: string },
) {
  const template = await loadTemplate(deps.pool, principal.tenantId, ref);
  const version = await loadVersion(deps.pool, template, body.version ?? template.version);
  const params = version.params as TemplateParam[];
  const values = resolveParams(params, body.params);
  const secretParams = new Set(params.filter((p) => p.secret).map((p) => p.name));
  const submit = runDefinition(version.definition, values, secretParams, {
    name: body.name,
    tags: body.tags,
    webhook: body.webhook,
  });
  const sealed = secretsUsed(version.definition, params);
  const key = deps.config.runs.secretsKey;
  if (sealed.length > 0 && key === null) throw runsError('secrets_unavailable');
  const launch: TemplateLaunch = {
    templateId: template.template_id,
    scheduledStart: clampedStart(body.scheduled_start),
    sealSecrets: (workflowId) =>
      sealed.map((name) => ({
        name,
        ciphertext: encryptWorkflowSecret(key!, workflowId, name, values.get(name) ?? ''),
      })),
    audit: (workflowId) => ({
      tenantId: principal.tenantId,
      actor: principal.keyId,
      action: 'template.run',
      outcome: 'ok',
      target: template.template_id,
      detail: {
        workflow_id: workflowId,
        version: version.version,
        params: Object.keys(body.params),
        ...(trigger && { trigger_id: trigger.triggerId, occurrence: trigger.occurrence }),
      },
    }),
    trigger,
  };
  const accepted = await submitWorkflow(deps, starter, principal, submit, launch);
  return {
    workflow_id: accepted.workflow_id,
    template_id: template.template_id,
    version: version.version,
    status: accepted.status,
    clamped: accepted.clamped,
  };
}
