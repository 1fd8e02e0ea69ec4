import type { OperationContract } from '../http/contract';
import { jsonSchemaOf, type JsonSchema } from '../http/json-schema';
import type { RequestSchemas } from '../http/validate';

/** Where a tool argument goes in the REST request the tool makes. */
export type ArgumentLocation = 'params' | 'query' | 'body';

/** MCP's tool annotations (hints to a client; the route's guard is what enforces). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** One tool a service offers: one of its REST operations, named for agents. */
export interface OperationToolSpec<Operation extends OperationContract = OperationContract> {
  /** snake_case, unique in the service. */
  name: string;
  operation: Operation;
  annotations: ToolAnnotations;
}

/** A tool as the MCP endpoint lists and calls it. */
export interface OperationTool<Operation extends OperationContract = OperationContract> {
  name: string;
  title: string;
  description: string;
  /** The operation's path parameters, query and body as one JSON-Schema object. */
  inputSchema: JsonSchema;
  annotations: ToolAnnotations;
  operation: Operation;
  /** Where each declared argument goes in the REST request. */
  locations: Record<string, ArgumentLocation>;
}

export interface ToolInput {
  schema: JsonSchema;
  locations: Record<string, ArgumentLocation>;
}

const COMPONENT_REF = '#/components/schemas/';
const DEFS_REF = '#/$defs/';
const PARTS: ArgumentLocation[] = ['params', 'query', 'body'];
/**
 * Keywords of a part's object schema that the combined object states itself (properties,
 * required, additionalProperties) or that would count the other parts' arguments too
 * (min/maxProperties: the REST validation still enforces them).
 */
const MERGED_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'minProperties',
  'maxProperties',
  'description',
  'title',
  'default',
  '$id',
]);

const isObject = (value: unknown): value is JsonSchema =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** A copy of a schema with its `#/components/schemas/X` references as `#/$defs/X`. */
function rewriteRefs(value: unknown, referenced: Set<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, referenced));
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => {
      if (key === '$ref' && typeof v === 'string' && v.startsWith(COMPONENT_REF)) {
        const name = v.slice(COMPONENT_REF.length);
        referenced.add(name);
        return [key, `${DEFS_REF}${name}`];
      }
      return [key, rewriteRefs(v, referenced)];
    }),
  );
}

const isObjectType = (type: unknown) =>
  type === 'object' || (Array.isArray(type) && type.length === 1 && type[0] === 'object');

/** A part's schema as an object schema (a named one resolved from its definition). */
function objectSchemaOf(location: ArgumentLocation, schema: JsonSchema, definitions: JsonSchema) {
  let resolved = schema;
  const ref = schema.$ref;
  if (typeof ref === 'string' && ref.startsWith(COMPONENT_REF))
    resolved = definitions[ref.slice(COMPONENT_REF.length)] as JsonSchema;
  if (!isObject(resolved) || !isObjectType(resolved.type))
    throw new Error(`the ${location} schema is not an object: it cannot be a tool's arguments`);
  return resolved;
}

/**
 * The arguments of a tool that makes one REST request: the request's path parameters, query and
 * body (joi, as the route validates them) as one JSON-Schema object, through the converter the
 * OpenAPI document uses. Path parameters are required; a name in two parts is refused (the tool
 * could not tell where it goes). Schemas named with `.id()` are in `$defs`. Unknown arguments
 * are allowed where the body (or, without one, the query) allows unknown keys.
 */
export function toolInputOf(request: RequestSchemas | undefined): ToolInput {
  const definitions: JsonSchema = {};
  const properties: JsonSchema = {};
  const required: string[] = [];
  const locations: Record<string, ArgumentLocation> = {};
  const constraints: JsonSchema[] = [];
  let additional: unknown = false;
  let patternProperties: unknown;
  const referenced = new Set<string>();
  for (const location of PARTS) {
    const joi = request?.[location];
    if (!joi) continue;
    const part = objectSchemaOf(location, jsonSchemaOf(joi, definitions), definitions);
    const partProperties = (part.properties ?? {}) as JsonSchema;
    for (const [name, property] of Object.entries(partProperties)) {
      if (locations[name])
        throw new Error(`argument ${name} is in both ${locations[name]} and ${location}`);
      locations[name] = location;
      properties[name] = rewriteRefs(property, referenced);
    }
    const partRequired = location === 'params' ? Object.keys(partProperties) : part.required;
    required.push(...((partRequired ?? []) as string[]));
    const rest = Object.entries(part).filter(([key]) => !MERGED_KEYWORDS.has(key));
    if (rest.length > 0)
      constraints.push(rewriteRefs(Object.fromEntries(rest), referenced) as JsonSchema);
    // Unknown arguments go to the body, or to the query without one: its rule is theirs.
    if (location !== 'params') {
      additional = part.additionalProperties ?? true;
      patternProperties = part.patternProperties;
    }
  }
  const defs: JsonSchema = {};
  const pending = [...referenced];
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (defs[name]) continue;
    const before = new Set(referenced);
    defs[name] = rewriteRefs(definitions[name], referenced);
    for (const added of referenced) if (!before.has(added)) pending.push(added);
  }
  const schema: JsonSchema = {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: rewriteRefs(additional, referenced),
    ...(patternProperties ? { patternProperties } : {}),
    ...(constraints.length > 0 ? { allOf: constraints } : {}),
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  };
  return { schema, locations };
}

/** A tool from its spec: `describe` adds the service's words (the scope it needs) to the text. */
export function operationTool<Operation extends OperationContract>(
  spec: OperationToolSpec<Operation>,
  describe: (operation: Operation) => string = () => '',
): OperationTool<Operation> {
  const { operation } = spec;
  const { schema, locations } = toolInputOf(operation.request);
  const sentence = (text: string) => (/[.!?]$/.test(text) ? text : `${text}.`);
  const description = [
    sentence(operation.summary),
    describe(operation),
    operation.description ?? '',
    `REST: ${operation.method.toUpperCase()} ${operation.path}.`,
  ]
    .filter((text) => text !== '')
    .join(' ');
  return {
    name: spec.name,
    title: spec.annotations.title ?? operation.summary,
    description,
    inputSchema: schema,
    annotations: spec.annotations,
    operation,
    locations,
  };
}

/** The tools of a service; a name used twice is refused. */
export function operationTools<Operation extends OperationContract>(
  specs: readonly OperationToolSpec<Operation>[],
  describe?: (operation: Operation) => string,
): OperationTool<Operation>[] {
  const seen = new Set<string>();
  return specs.map((spec) => {
    if (!/^[a-z][a-z0-9_]*$/.test(spec.name)) throw new Error(`${spec.name}: not snake_case`);
    if (seen.has(spec.name)) throw new Error(`tool ${spec.name} is declared twice`);
    seen.add(spec.name);
    return operationTool(spec, describe);
  });
}

/** Arguments a tool cannot turn into its REST request (a path parameter missing). */
export class ToolArgumentError extends Error {}

/** The REST request a tool call makes, as a method, a path with its query, and a JSON body. */
export interface RestRequest {
  method: string;
  url: string;
  body?: string;
}

function queryValues(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(queryValues);
  if (typeof value === 'string') return [value];
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return [String(value)];
  return [JSON.stringify(value)];
}

/**
 * The REST request of a tool call: each argument where its location says (path parameters
 * percent-encoded, query values as text, the rest as the JSON body). Arguments the schema does not
 * declare go to the body (or the query without one), so the route refuses them as REST does.
 * Nothing is validated here: the route's own validation answers.
 */
export function restRequestOf(tool: OperationTool, args: Record<string, unknown>): RestRequest {
  const { operation } = tool;
  const hasBody = operation.request?.body !== undefined;
  const body: Record<string, unknown> = {};
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(args)) {
    const location = tool.locations[name] ?? (hasBody ? 'body' : 'query');
    if (location === 'params') continue;
    if (location === 'body') body[name] = value;
    // A query has no null: an optional filter given null is not given.
    else if (value !== undefined && value !== null)
      for (const text of queryValues(value)) query.append(name, text);
  }
  const path = operation.path.replace(/\{([A-Za-z0-9_]+)\}/g, (_, name: string) => {
    const value = args[name];
    if ((typeof value !== 'string' && typeof value !== 'number') || value === '')
      throw new ToolArgumentError(`argument ${name} (a path parameter) is required: a string`);
    return encodeURIComponent(String(value));
  });
  const search = query.toString();
  return {
    method: operation.method.toUpperCase(),
    url: search === '' ? path : `${path}?${search}`,
    ...(hasBody ? { body: JSON.stringify(body) } : {}),
  };
}
