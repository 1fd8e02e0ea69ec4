import { runsError } from '../errors';

/**
 * `${{ name }}` placeholders in a template's definition (pure). A placeholder may stand in any
 * string of the definition (array items and object values at any depth; object keys are never
 * substituted), with whitespace allowed inside the braces, several in one string. There is no
 * escape: text that opens with `${{` and closes with `}}` without a brace between is a placeholder.
 *
 * A secret parameter may appear only in a node's `env` values. Its placeholder is never replaced
 * here: the stored node spec keeps it, written `${{ name }}`, and the engine substitutes the
 * decrypted value at node launch (substituteSecrets), so no read of the workflow shows it.
 */

export const PLACEHOLDER_OPENING = '${{';
const PLACEHOLDER = /\$\{\{\s*([^{}]*?)\s*\}\}/g;
/** What a read shows of every env value of a definition (the spec: "redacted when read"). */
export const REDACTED = '[redacted]';

export type JsonPath = (string | number)[];

export interface PlaceholderUse {
  name: string;
  /** Where the string that holds it is: ['nodes', 0, 'env', 'TOKEN']. */
  path: JsonPath;
}

/** The placeholder of `name` as stored for the engine. */
export const canonicalPlaceholder = (name: string): string => `\${{ ${name} }}`;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Every placeholder in the strings of `value`, in document order. */
export function placeholdersIn(value: unknown, path: JsonPath = []): PlaceholderUse[] {
  if (typeof value === 'string')
    return [...value.matchAll(PLACEHOLDER)].map((m) => ({ name: m[1]!, path }));
  if (Array.isArray(value)) return value.flatMap((item, i) => placeholdersIn(item, [...path, i]));
  if (isObject(value))
    return Object.entries(value).flatMap(([key, item]) => placeholdersIn(item, [...path, key]));
  return [];
}

/** Whether `path` is a node's env value: the one place a secret parameter may stand. */
export const isNodeEnvValue = (path: JsonPath): boolean =>
  path.length === 4 && path[0] === 'nodes' && typeof path[1] === 'number' && path[2] === 'env';

/** `nodes[0].env.TOKEN`, as joi names a path. */
export const pathText = (path: JsonPath): string =>
  path.reduce<string>(
    (text, part) =>
      typeof part === 'number' ? `${text}[${part}]` : text === '' ? part : `${text}.${part}`,
    '',
  );

/**
 * At register and PATCH: each placeholder names a declared parameter (else 422
 * `unknown_template_param:<name>`), and a secret one stands only in a node's env value (else 422
 * `secret_param_outside_env:<name>`). The first placeholder at fault is named.
 */
export function assertPlaceholders(
  definition: unknown,
  params: readonly { name: string; secret: boolean }[],
): void {
  const declared = new Map(params.map((p) => [p.name, p]));
  for (const { name, path } of placeholdersIn(definition)) {
    const param = declared.get(name);
    const details = { param: name, path: pathText(path) };
    if (!param)
      throw runsError('unknown_template_param', {
        message: `unknown_template_param:${name}`,
        details,
      });
    if (param.secret && !isNodeEnvValue(path))
      throw runsError('secret_param_outside_env', {
        message: `secret_param_outside_env:${name}`,
        details,
      });
  }
}

/** The secret parameters the definition uses, each once, in document order. */
export function secretsUsed(
  definition: unknown,
  params: readonly { name: string; secret: boolean }[],
): string[] {
  const secret = new Set(params.filter((p) => p.secret).map((p) => p.name));
  return [...new Set(placeholdersIn(definition).map((u) => u.name))].filter((n) => secret.has(n));
}

function mapStrings(value: unknown, change: (text: string) => string): unknown {
  if (typeof value === 'string') return change(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, change));
  if (isObject(value))
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, mapStrings(item, change)]),
    );
  return value;
}

/**
 * The definition of a run: each placeholder of a parameter that is not secret replaced by its
 * value (the empty string when the run has none), in one pass (a value is never read for
 * placeholders again); each secret one written canonically, left for the engine.
 */
export function substitute(
  definition: Record<string, unknown>,
  values: ReadonlyMap<string, string>,
  secrets: ReadonlySet<string>,
): Record<string, unknown> {
  return mapStrings(definition, (text) =>
    text.replace(PLACEHOLDER, (_whole, name: string) =>
      secrets.has(name) ? canonicalPlaceholder(name) : (values.get(name) ?? ''),
    ),
  ) as Record<string, unknown>;
}

/**
 * For the engine, at node launch: `text` (an env value of a stored node spec) with each
 * placeholder of a secret it is given replaced by the secret's value; others are left as they are.
 */
export function substituteSecrets(text: string, secrets: ReadonlyMap<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => secrets.get(name) ?? whole);
}

/** The definition as a read shows it: every node's env values `[redacted]`, the rest as stored. */
export function redactDefinition(definition: Record<string, unknown>): Record<string, unknown> {
  const { nodes } = definition;
  if (!Array.isArray(nodes)) return definition;
  return {
    ...definition,
    nodes: nodes.map((node: unknown) =>
      isObject(node) && isObject(node.env)
        ? {
            ...node,
            env: Object.fromEntries(Object.keys(node.env).map((key) => [key, REDACTED])),
          }
        : node,
    ),
  };
}
