import Joi from 'joi';
import type { Context, Next } from 'koa';
import { RequestValidationError, type ValidationIssue } from '../../platform/errors';
import { compileJsonSchemaCheck } from './json-schema-check';

export interface RequestSchemas {
  body?: Joi.Schema;
  query?: Joi.Schema;
  params?: Joi.Schema;
  /**
   * For a hot route: a body its documented JSON Schema accepts (compiled, with its defaults) is
   * taken as it is, without joi; any other body goes to joi, the one source of the rules, for
   * its conversions and its errors. Only for a body whose every rule the JSON Schema states (no
   * custom check, no conversion a client relies on); a property test holds the two together.
   */
  bodyCheckedByJsonSchema?: boolean;
}

/** The validated, converted parts of a request, for route handlers. */
export interface ValidatedState {
  body?: unknown;
  query?: unknown;
  params?: unknown;
}

export const MISSING_BODY: ValidationIssue = {
  location: 'body',
  path: [],
  message: 'a JSON request body is required',
  type: 'any.required',
};

const JOI_OPTIONS: Joi.ValidationOptions = {
  abortEarly: false,
  convert: true,
  errors: { wrap: { label: false } },
};

function issuesOf(
  location: ValidationIssue['location'],
  error: Joi.ValidationError,
): ValidationIssue[] {
  return error.details.map((d) => ({ location, path: d.path, message: d.message, type: d.type }));
}

/**
 * Validates body, query and params with joi before the handler runs; the converted values
 * land on ctx.state.validated. Failures become one RequestValidationError, which each
 * service's envelope renders in its own shape.
 */
export function validate(schemas: RequestSchemas) {
  const accepted =
    schemas.bodyCheckedByJsonSchema && schemas.body
      ? compileJsonSchemaCheck(schemas.body)
      : undefined;
  return async function validateRequest(ctx: Context, next: Next): Promise<void> {
    const issues: ValidationIssue[] = [];
    const validated: ValidatedState = {};
    const parts: [keyof ValidatedState, unknown][] = [
      ['params', (ctx as Context & { params?: unknown }).params],
      ['query', ctx.query],
      ['body', ctx.request.body],
    ];
    for (const [location, input] of parts) {
      const schema = schemas[location];
      if (!schema) continue;
      // A route that declares a body needs one: an empty request is the client's error, never
      // an `undefined` handed to service logic.
      if (location === 'body' && input === undefined) {
        issues.push(MISSING_BODY);
        continue;
      }
      if (location === 'body' && accepted?.(input)) {
        validated.body = input;
        continue;
      }
      const result: Joi.ValidationResult<unknown> = schema.validate(input, JOI_OPTIONS);
      // A field whose schema names its own refusal (`.error(ledgerError(...))`) answers with it.
      const error: Error | undefined = result.error;
      if (error && !Joi.isError(error)) throw error;
      if (result.error) issues.push(...issuesOf(location, result.error));
      else validated[location] = result.value;
    }
    if (issues.length > 0) throw new RequestValidationError(issues);
    ctx.state.validated = validated;
    await next();
  };
}
