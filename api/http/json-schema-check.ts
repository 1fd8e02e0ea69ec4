import Ajv from 'ajv';
import type Joi from 'joi';
import { jsonSchemaOf, type JsonSchema } from './json-schema';

// Documents' keywords (description, example, x-...) are not checks: not strict about them.
const ajv = new Ajv({ strict: false, useDefaults: true, allErrors: false });

/**
 * A joi schema's documented JSON Schema (the one its OpenAPI document states), compiled: true for
 * a value that schema accepts, with the schema's defaults filled in place.
 */
export function compileJsonSchemaCheck(schema: Joi.Schema): (value: unknown) => boolean {
  const components: JsonSchema = {};
  const root = jsonSchemaOf(schema, components);
  // The refs point at `#/components/schemas/<Name>`, as in the document.
  return ajv.compile({ ...root, components: { schemas: components } });
}
