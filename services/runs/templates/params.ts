import vm from 'node:vm';
import { runsError } from '../errors';
import { PLACEHOLDER_OPENING } from './substitution';

/**
 * A template's parameter declarations and the rules a value must meet (pure): a `string`
 * parameter's value may be any string, or only those its `pattern` matches whole; an `enum`
 * parameter's value is one of its `enum` list. Each value is a string of at most 4096 characters
 * that does not contain `${{` (a value is never a placeholder itself). A refusal names the
 * parameter, never its value.
 */

export const TEMPLATE_PARAMS_MAX = 50;
export const PARAM_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;
export const PARAM_VALUE_MAX_LENGTH = 4096;
export const PARAM_PATTERN_MAX_LENGTH = 512;
export const PARAM_ENUM_VALUES_MAX = 100;
export const PARAM_ENUM_VALUE_MAX_LENGTH = 256;
export const PARAM_DESCRIPTION_MAX_LENGTH = 1024;
/**
 * What one request's pattern matches may take in all, run under a watchdog: a pattern that
 * backtracks catastrophically cannot hold the event loop longer. Past it the value is refused.
 */
export const PATTERN_MATCH_BUDGET_MS = 100;

export type ParamType = 'string' | 'enum';

/** A parameter declaration as accepted (defaults filled); `pattern` and `enum` by its type. */
export interface TemplateParam {
  name: string;
  type: ParamType;
  required: boolean;
  secret: boolean;
  default?: string;
  pattern?: string;
  enum?: string[];
  description?: string | null;
}

/** `pattern` as a regular expression that matches a whole value; null: not a valid one. */
export function compilePattern(pattern: string): RegExp | null {
  try {
    // Compiled alone first: `a)(b` is no pattern, though `^(?:a)(b)$` would compile.
    new RegExp(pattern, 'u');
    return new RegExp(`^(?:${pattern})$`, 'u');
  } catch {
    return null;
  }
}

/** Milliseconds of pattern matching a request may still spend. */
export interface MatchBudget {
  remainingMs: number;
}

export const matchBudget = (): MatchBudget => ({ remainingMs: PATTERN_MATCH_BUDGET_MS });

const MATCHER = new vm.Script('pattern.test(value)');
const SANDBOX = vm.createContext({ pattern: null as RegExp | null, value: '' });

/** Whether `regex` matches `value`; 'timeout' once the budget is spent. */
export function matchesWithin(
  regex: RegExp,
  value: string,
  budget: MatchBudget,
): boolean | 'timeout' {
  if (budget.remainingMs <= 0) return 'timeout';
  const started = performance.now();
  Object.assign(SANDBOX, { pattern: regex, value });
  try {
    return MATCHER.runInContext(SANDBOX, { timeout: Math.ceil(budget.remainingMs) }) === true;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      // vm's timer may fire a fraction of a millisecond before our clock says it is spent.
      budget.remainingMs = 0;
      return 'timeout';
    }
    throw error;
  } finally {
    Object.assign(SANDBOX, { pattern: null, value: '' });
    budget.remainingMs -= performance.now() - started;
  }
}

const characters = (value: string) => [...value].length;

/** Whether `value` meets the parameter's rule (its type's, its length, no placeholder). */
export function satisfiesRule(param: TemplateParam, value: string, budget: MatchBudget): boolean {
  if (characters(value) > PARAM_VALUE_MAX_LENGTH) return false;
  if (value.includes(PLACEHOLDER_OPENING)) return false;
  if (param.type === 'enum') return (param.enum ?? []).includes(value);
  if (param.pattern === undefined) return true;
  const regex = compilePattern(param.pattern);
  return regex !== null && matchesWithin(regex, value, budget) === true;
}

/**
 * What the schema cannot check of the declarations, at register and PATCH: each default meets its
 * own parameter's rule, else 422 `invalid_template_param:<name>`.
 */
export function assertDeclarations(params: TemplateParam[], budget = matchBudget()): void {
  for (const param of params) {
    if (param.default !== undefined && !satisfiesRule(param, param.default, budget))
      throw paramError('invalid_template_param', param.name, { default: true });
  }
}

const paramError = (
  code: 'unknown_template_param' | 'missing_template_param' | 'invalid_template_param',
  name: string,
  details: Record<string, unknown> = {},
) => runsError(code, { message: `${code}:${name}`, details: { param: name, ...details } });

/**
 * The value of each declared parameter for a run, from the values given and the defaults, in
 * declaration order: a name not declared is 422 `unknown_template_param:<name>`, a required
 * parameter without a value `missing_template_param:<name>`, a value that fails the rule
 * `invalid_template_param:<name>`. An optional parameter with neither value nor default is left
 * out (its placeholders become the empty string).
 */
export function resolveParams(
  params: TemplateParam[],
  given: Record<string, string>,
  budget = matchBudget(),
): Map<string, string> {
  const declared = new Map(params.map((p) => [p.name, p]));
  for (const name of Object.keys(given))
    if (!declared.has(name)) throw paramError('unknown_template_param', name);
  // A Map: a parameter may be named `__proto__`.
  const values = new Map<string, string>();
  for (const param of params) {
    const value = Object.hasOwn(given, param.name) ? given[param.name] : undefined;
    if (value === undefined) {
      if (param.required) throw paramError('missing_template_param', param.name);
      if (param.default !== undefined) values.set(param.name, param.default);
      continue;
    }
    if (!satisfiesRule(param, value, budget))
      throw paramError('invalid_template_param', param.name);
    values.set(param.name, value);
  }
  return values;
}

/** A declaration as a read shows it: every field, a secret one marked (it has no default). */
export function presentParam(param: TemplateParam) {
  return {
    name: param.name,
    type: param.type,
    required: param.required,
    secret: param.secret,
    default: param.secret ? null : (param.default ?? null),
    pattern: param.pattern ?? null,
    enum: param.enum ?? null,
    description: param.description ?? null,
  };
}
