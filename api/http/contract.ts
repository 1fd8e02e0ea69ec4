import type Router from '@koa/router';
import type Joi from 'joi';
import type { Middleware } from 'koa';
import { jsonSchemaOf, type JsonSchema } from './json-schema';
import { validate, type RequestSchemas } from './validate';

export type { JsonSchema };
export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options';

export interface ResponseContract {
  description: string;
  /**
   * application/json, unless `content` says otherwise; none: no body. A joi schema is converted
   * (one named with `.id(name)` becomes a component), so a response model can be joi too.
   */
  schema?: JsonSchema | Joi.Schema;
  content?: Record<string, { schema: JsonSchema }>;
  headers?: Record<string, unknown>;
}

/**
 * One operation of a service: what its route enforces (the joi schemas its handler receives
 * validated) and what its OpenAPI document says, from one declaration. The document's parameters
 * and request body are generated from the joi schemas, so a bound the code enforces is the bound
 * the document states.
 */
export interface OperationContract {
  method: HttpMethod;
  /** OpenAPI form, `/api/v1/runs/{track_id}`; the route's Koa path is derived from it. */
  path: string;
  operationId: string;
  /** The Koa route's name (`run.submit`), where the service reads it back (audit actions). */
  routeName?: string;
  summary: string;
  description?: string;
  tags?: string[];
  request?: RequestSchemas;
  responses: Record<string, ResponseContract>;
  /** Service-specific OpenAPI fields: security, x-permission, x-decisions, ... */
  extensions?: Record<string, unknown>;
}

/** `/runs/{track_id}` → `/runs/:track_id` */
export const koaPath = (openApiPath: string): string =>
  openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');

/**
 * Mounts an operation on a router: `guards` first (authentication, permission: a caller who may
 * not call the route learns nothing of its validation), then the joi validation of the contract,
 * then the handler.
 */
export function mount(
  router: Router,
  operation: OperationContract,
  guards: Middleware[],
  ...handlers: Middleware[]
): void {
  const validation = operation.request ? [validate(operation.request)] : [];
  const path = koaPath(operation.path);
  const middleware = [...guards, ...validation, ...handlers];
  if (operation.routeName) router[operation.method](operation.routeName, path, ...middleware);
  else router[operation.method](path, ...middleware);
}

type ParameterLocation = 'path' | 'query';

/** Each key of a params or query object schema as an OpenAPI parameter. */
function parametersOf(
  schema: Joi.Schema | undefined,
  location: ParameterLocation,
  definitions: JsonSchema,
): JsonSchema[] {
  if (!schema) return [];
  const object = jsonSchemaOf(schema, definitions);
  const properties = (object.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((object.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...propertySchema } = property;
    return {
      name,
      in: location,
      required: location === 'path' || required.has(name),
      ...(description ? { description } : {}),
      schema: propertySchema,
    };
  });
}

const isJoi = (schema: JsonSchema | Joi.Schema): schema is Joi.Schema =>
  typeof (schema as Joi.Schema).describe === 'function';

function responsesOf(
  responses: Record<string, ResponseContract>,
  definitions: JsonSchema,
): JsonSchema {
  const converted = (schema: JsonSchema | Joi.Schema) =>
    isJoi(schema) ? jsonSchemaOf(schema, definitions) : schema;
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) => {
      const content =
        response.content ??
        (response.schema
          ? { 'application/json': { schema: converted(response.schema) } }
          : undefined);
      return [
        status,
        {
          description: response.description,
          ...(response.headers ? { headers: response.headers } : {}),
          ...(content ? { content } : {}),
        },
      ];
    }),
  );
}

/**
 * An operation as an OpenAPI operation object; `definitions` (the document's
 * components.schemas) receives the request schemas named with joi's `.id(name)`.
 */
export function openApiOperation(
  operation: OperationContract,
  definitions: JsonSchema,
): JsonSchema {
  const { request } = operation;
  const parameters = [
    ...parametersOf(request?.params, 'path', definitions),
    ...parametersOf(request?.query, 'query', definitions),
  ];
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    ...(operation.tags ? { tags: operation.tags } : {}),
    ...operation.extensions,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(request?.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: jsonSchemaOf(request.body, definitions) } },
          },
        }
      : {}),
    responses: responsesOf(operation.responses, definitions),
  };
}

/** The licence every OpenAPI document states: the repository's (LICENSE, package.json). */
export const OPENAPI_LICENSE = { name: 'Apache-2.0', identifier: 'Apache-2.0' } as const;

/**
 * The `paths` of an OpenAPI document from a service's operations; the request schemas named with
 * `.id(name)` are added to `definitions` (its components.schemas).
 */
export function openApiPaths(
  operations: readonly OperationContract[],
  definitions: JsonSchema,
): Record<string, JsonSchema> {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of operations) {
    const item = (paths[operation.path] ??= {});
    if (item[operation.method])
      throw new Error(`${operation.method.toUpperCase()} ${operation.path} is declared twice`);
    item[operation.method] = openApiOperation(operation, definitions);
  }
  return paths;
}
