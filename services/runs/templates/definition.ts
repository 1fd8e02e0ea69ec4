import type Joi from 'joi';
import { runsError } from '../errors';
import { WorkflowSubmitRequest } from '../dags/submit-request';
import type { WorkflowSubmitBody } from '../dags/submit';
import type { InlineWebhookBody } from '../webhooks/inline';
import {
  assertPlaceholders,
  pathText,
  placeholdersIn,
  substitute,
  type PlaceholderUse,
} from './substitution';

/**
 * A template's definition is a workflow submit body with placeholders: judged by the submit's own
 * schema (dags/submit-request.ts), loosely at register (a value that holds a placeholder is judged at
 * run, once substituted) and fully at run, before the submit's path.
 */

/** A definition's JSON at register and PATCH, at most (past it 422 template_too_large). */
export const TEMPLATE_DEFINITION_MAX_BYTES = 256 * 1024;
/**
 * A run's definition once substituted, at most: what a workflow submit's body may be
 * (RUNS_BODY_LIMIT_BYTES), so a run never stores more than a submit could.
 */
export const TEMPLATE_RUN_DEFINITION_MAX_BYTES = 1024 * 1024;

const WORKFLOW_SUBMIT_SCHEMA = WorkflowSubmitRequest;
/** As the routes validate a body (api/http/validate.ts). */
const JOI_OPTIONS: Joi.ValidationOptions = {
  abortEarly: false,
  convert: true,
  errors: { wrap: { label: false } },
};

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** Whether a string or an object key anywhere in `value` holds U+0000 (jsonb cannot store it). */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(holdsNul);
  if (value !== null && typeof value === 'object')
    return Object.entries(value).some(([key, item]) => key.includes('\u0000') || holdsNul(item));
  return false;
}

const definitionError = (messages: string[]) =>
  runsError('invalid_template_definition', {
    message: `invalid_template_definition: ${messages.join('; ')}`,
  });

/**
 * At register and PATCH: at most 256 KiB of JSON (422 template_too_large); no `webhook` (a run
 * gives its own); the submit schema's judgement, but where a value holds a placeholder (422
 * `invalid_template_definition: <joi message>`); each placeholder a declared parameter, a secret
 * one in a node's env value only (substitution.ts).
 */
export function assertDefinition(
  definition: Record<string, unknown>,
  params: readonly { name: string; secret: boolean }[],
): void {
  if (jsonBytes(definition) > TEMPLATE_DEFINITION_MAX_BYTES)
    throw runsError('template_too_large', {
      details: { max_definition_bytes: TEMPLATE_DEFINITION_MAX_BYTES },
    });
  // Stored as given (values holding a placeholder are not yet judged), so refused whole here.
  if (holdsNul(definition)) throw definitionError(['definition must not contain U+0000 (NUL)']);
  if (Object.hasOwn(definition, 'webhook'))
    throw definitionError(['webhook is not allowed in a definition (a run gives its own)']);
  const deferred = new Set(placeholdersIn(definition).map((use) => pathText(use.path)));
  const { error } = WORKFLOW_SUBMIT_SCHEMA.validate(definition, JOI_OPTIONS);
  const problems = (error?.details ?? []).filter((d) => !deferred.has(pathText(d.path)));
  if (problems.length > 0) throw definitionError(problems.map((d) => d.message));
  assertPlaceholders(definition, params);
}

/** What a run's body changes of the definition. */
export interface RunOverrides {
  /** Replaces the definition's name (null clears it); absent: the definition's. */
  name?: string | null;
  /** Added to the definition's tags (each once). */
  tags: string[];
  webhook?: InlineWebhookBody;
}

function withOverrides(definition: Record<string, unknown>, overrides: RunOverrides) {
  const body = { ...definition };
  if (overrides.name !== undefined) body.name = overrides.name;
  if (overrides.tags.length > 0) {
    const own = body.tags === undefined ? [] : body.tags;
    // Tags that are no list are left for the schema to refuse.
    if (Array.isArray(own)) body.tags = [...new Set([...(own as unknown[]), ...overrides.tags])];
  }
  if (overrides.webhook !== undefined) body.webhook = overrides.webhook;
  return body;
}

/** The substituted definition's JSON at most: each use of a value counted at its full size. */
function grownBytes(
  definition: Record<string, unknown>,
  uses: PlaceholderUse[],
  values: ReadonlyMap<string, string>,
) {
  return uses.reduce(
    (bytes, use) => bytes + jsonBytes(values.get(use.name) ?? ''),
    jsonBytes(definition),
  );
}

/**
 * The workflow submit body of a run: the definition with its parameters' values (secret ones
 * left as placeholders), the run's name, tags and webhook, judged by the submit schema (422
 * `invalid_template_definition: <joi message>`), at most 1 MiB once substituted (422
 * template_too_large).
 */
export function runDefinition(
  definition: Record<string, unknown>,
  values: ReadonlyMap<string, string>,
  secrets: ReadonlySet<string>,
  overrides: RunOverrides,
): WorkflowSubmitBody {
  if (
    grownBytes(definition, placeholdersIn(definition), values) > TEMPLATE_RUN_DEFINITION_MAX_BYTES
  )
    throw runsError('template_too_large', {
      details: { max_run_definition_bytes: TEMPLATE_RUN_DEFINITION_MAX_BYTES },
    });
  const body = withOverrides(substitute(definition, values, secrets), overrides);
  const result: Joi.ValidationResult<WorkflowSubmitBody> = WORKFLOW_SUBMIT_SCHEMA.validate(
    body,
    JOI_OPTIONS,
  );
  if (result.error) throw definitionError(result.error.details.map((d) => d.message));
  return result.value;
}
