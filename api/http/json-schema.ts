import { createRequire } from 'node:module';
import type Joi from 'joi';

export type JsonSchema = Record<string, unknown>;

/**
 * joi → JSON Schema (OpenAPI 3.1's dialect) with joi-to-json, which reads joi's own describe().
 * Its OpenAPI 3.1 parser leaves out three things our schemas use; a subclass adds them where the
 * describe() of that level is at hand:
 * - greater/less as exclusiveMinimum/exclusiveMaximum alone (it adds draft-04's minimum/maximum);
 * - an object's min/max/length of keys (minProperties, maxProperties), a string's length, and
 *   the minLength 1 of every joi string that does not allow '';
 * - a string pattern with flags (joi's `/.../i`) has no JSON Schema form: refused here, so the
 *   schema spells its cases out (`[0-9A-Za-z]`);
 * - a rule joi cannot describe (a `.custom()` check): the schema states it in meta
 *   `{ 'x-schema': {...} }`, merged into the output (e.g. a calendar check's pattern and format),
 *   or put in its place with `$replace: true` (a field whose rule depends on another field's
 *   value, stated once for the whole object with if/then);
 * - `.pattern(regex, value)` is written as patternProperties only (the parser also adds a
 *   property named after the regex source).
 */
interface JoiDescription {
  type?: string;
  rules?: { name: string; args?: { limit?: number; regex?: string } }[];
  metas?: Record<string, unknown>[];
  patterns?: { regex?: string }[];
  allow?: unknown[];
  flags?: { id?: string };
}

interface ParserInstance {
  parse(description: JoiDescription, definitions?: JsonSchema, level?: number): JsonSchema;
}
type ParserClass = new (options?: unknown) => ParserInstance;

const requireCommonJs = createRequire(__filename);
const OpenApi31Parser = requireCommonJs('joi-to-json/lib/parsers/open-api-3.1') as ParserClass;

/** The JSON Schema keywords of joi's size rules that joi-to-json leaves out, by type. */
const SIZE_RULES: Record<string, Record<string, string[]>> = {
  object: {
    min: ['minProperties'],
    max: ['maxProperties'],
    length: ['minProperties', 'maxProperties'],
  },
  string: { length: ['minLength', 'maxLength'] },
};

function refuseRegexFlags(description: JoiDescription) {
  for (const rule of description.rules ?? []) {
    const regex = rule.name === 'pattern' ? rule.args?.regex : undefined;
    if (regex && !regex.endsWith('/'))
      throw new Error(`${regex}: a JSON Schema pattern has no flags; spell the cases out`);
  }
}

class PlatformSchemaParser extends OpenApi31Parser {
  override parse(description: JoiDescription, definitions: JsonSchema = {}, level = 0) {
    if (description.type === 'string') refuseRegexFlags(description);
    const schema = super.parse(description, definitions, level);
    const id = description.flags?.id;
    if (!id || !schema.$ref) {
      refine(schema, description);
      return schema;
    }
    // A schema named with .id() comes back as a $ref: what is added belongs to its definition,
    // which every use shares, so a use's allow(null) is stated beside the $ref, not in it.
    const definition = definitions[id] as JsonSchema;
    refine(definition, description);
    withoutNull(definition);
    if (!description.allow?.includes(null)) return schema;
    const { $ref, ...rest } = schema;
    return { ...rest, anyOf: [{ $ref }, { type: 'null' }] };
  }
}

/** A type list without 'null' (joi-to-json adds it to a named schema for one nullable use). */
function withoutNull(schema: JsonSchema): void {
  if (!Array.isArray(schema.type)) return;
  const types = (schema.type as string[]).filter((t) => t !== 'null');
  schema.type = types.length === 1 ? types[0] : types;
}

function refine(schema: JsonSchema, description: JoiDescription): void {
  const sizeRules = SIZE_RULES[description.type ?? ''] ?? {};
  for (const rule of description.rules ?? [])
    for (const keyword of sizeRules[rule.name] ?? []) schema[keyword] = rule.args?.limit;
  // joi's greater/less come out draft-04 style (minimum beside exclusiveMinimum); 3.1 needs one.
  if (schema.exclusiveMinimum !== undefined && schema.minimum === schema.exclusiveMinimum)
    delete schema.minimum;
  if (schema.exclusiveMaximum !== undefined && schema.maximum === schema.exclusiveMaximum)
    delete schema.maximum;
  // A joi string refuses '' unless it is allowed: a client must know that too.
  if (
    description.type === 'string' &&
    !description.allow?.includes('') &&
    schema.minLength === undefined &&
    schema.enum === undefined &&
    schema.const === undefined
  )
    schema.minLength = 1;
  if (description.type === 'object') {
    const properties = schema.properties as JsonSchema | undefined;
    for (const { regex } of description.patterns ?? []) if (regex) delete properties?.[regex];
    if (properties && Object.keys(properties).length === 0) delete schema.properties;
  }
  delete schema['x-schema'];
  for (const meta of description.metas ?? []) {
    const stated = meta['x-schema'] as JsonSchema | undefined;
    if (!stated) continue;
    // `$replace`: what joi-to-json made of this level (a `.when()` it renders as a loose oneOf)
    // gives way to the schema stated beside the joi rule.
    if (stated.$replace) {
      for (const key of Object.keys(schema)) delete schema[key];
      const { $replace: _replace, ...replacement } = stated;
      Object.assign(schema, replacement);
    } else Object.assign(schema, stated);
  }
}

/** A joi schema as JSON Schema; `definitions` collects the schemas named with `.id(name)`. */
export function jsonSchemaOf(schema: Joi.Schema, definitions: JsonSchema = {}): JsonSchema {
  const converted = new PlatformSchemaParser().parse(schema.describe(), definitions);
  delete converted.schemas; // the parser's copy of `definitions`: the document's components hold them
  return converted;
}
