import Router from '@koa/router';
import Joi from 'joi';
import { koaPath, mount, openApiPaths, type OperationContract } from '../../api/http/contract';
import { jsonSchemaOf } from '../../api/http/json-schema';
import { boundedText } from '../../platform/text';
import { undocumentedRoutes } from '../support/documented-routes';

describe('jsonSchemaOf: a joi schema as the JSON Schema a client validates with', () => {
  it('states the bounds joi enforces: lengths, ranges, enums, defaults, nulls, unique items', () => {
    const schema = Joi.object({
      name: Joi.string().min(1).max(128).allow(null).description('a name'),
      limit: Joi.number().integer().min(1).max(1000).default(100),
      stream: Joi.string().valid('stdout', 'stderr').required(),
      tags: Joi.array().items(Joi.string().max(64)).max(32).unique(),
    });
    expect(jsonSchemaOf(schema)).toEqual({
      type: 'object',
      properties: {
        name: { type: ['string', 'null'], minLength: 1, maxLength: 128, description: 'a name' },
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        stream: { type: 'string', enum: ['stdout', 'stderr'] },
        tags: {
          type: 'array',
          items: { type: 'string', minLength: 1, maxLength: 64 },
          maxItems: 32,
          uniqueItems: true,
        },
      },
      required: ['stream'],
      additionalProperties: false,
    });
  });

  it("states that a joi string refuses '' unless it allows it, and a text rule's bounds", () => {
    const schema = Joi.object({
      note: Joi.string().allow(''),
      label: boundedText(5, { min: 2, pattern: '^[^{}]*$', refuses: 'braces' }).allow(null),
      kind: Joi.string().valid('a', 'b'),
    });
    expect(jsonSchemaOf(schema).properties).toEqual({
      note: { type: 'string' },
      label: { type: ['string', 'null'], minLength: 2, maxLength: 5, pattern: '^[^{}]*$' },
      kind: { type: 'string', enum: ['a', 'b'] },
    });
    const label = boundedText(5, { min: 2, pattern: '^[^{}]*$', refuses: 'braces' });
    expect(label.validate('a{').error?.message).toBe('"value" must not contain braces');
    expect(label.validate('😀').error?.details[0]?.type).toBe('string.min');
    expect(label.validate('😀😀😀😀😀').error).toBeUndefined();
  });

  it("adds what joi-to-json leaves out: an object's key counts, pattern keys, a custom rule's meta", () => {
    const schema = Joi.object({
      env: Joi.object()
        .pattern(/^[A-Z_]+$/, Joi.string().max(5))
        .max(3),
      at: Joi.string()
        .custom((value: string) => value)
        .meta({ 'x-schema': { format: 'date-time', pattern: 'Z$' } }),
    }).min(1);
    expect(jsonSchemaOf(schema)).toEqual({
      type: 'object',
      properties: {
        env: {
          type: 'object',
          patternProperties: { '^[A-Z_]+$': { type: 'string', minLength: 1, maxLength: 5 } },
          additionalProperties: false,
          maxProperties: 3,
        },
        at: { type: 'string', minLength: 1, format: 'date-time', pattern: 'Z$' },
      },
      additionalProperties: false,
      minProperties: 1,
    });
  });

  it('puts a schema named with .id() in the definitions and refers to it', () => {
    const definitions = {};
    const body = Joi.object({ image: Joi.string().required() }).id('SubmitRequest');
    expect(jsonSchemaOf(Joi.object({ body }), definitions)).toMatchObject({
      properties: { body: { $ref: '#/components/schemas/SubmitRequest' } },
    });
    expect(definitions).toEqual({
      SubmitRequest: {
        type: 'object',
        properties: { image: { type: 'string', minLength: 1 } },
        required: ['image'],
        additionalProperties: false,
      },
    });
  });

  it('states a named schema nullable where a use allows null, and only there', () => {
    const definitions: Record<string, { type?: unknown }> = {};
    const window = Joi.object({ kind: Joi.string() }).id('Window');
    // Joi refuses one id on two schemas in one object: the two uses are converted apart.
    const maybe = jsonSchemaOf(Joi.object({ maybe: window.allow(null) }), definitions);
    const always = jsonSchemaOf(Joi.object({ always: window }), definitions);
    expect({ ...(maybe.properties as object), ...(always.properties as object) }).toEqual({
      maybe: { anyOf: [{ $ref: '#/components/schemas/Window' }, { type: 'null' }] },
      always: { $ref: '#/components/schemas/Window' },
    });
    expect(definitions.Window!.type).toBe('object');
  });
});

describe('operation contracts', () => {
  const getRun: OperationContract = {
    method: 'get',
    path: '/runs/{track_id}/logs',
    operationId: 'getLogs',
    summary: 'Logs',
    request: {
      params: Joi.object({ track_id: Joi.string().length(26).required() }),
      query: Joi.object({ since: Joi.number().integer().min(0).description('a line number') }),
    },
    responses: { '200': { description: 'the lines', schema: { type: 'array' } } },
  };

  it('generate the parameters and responses of the document from the joi schemas', () => {
    expect(openApiPaths([getRun], {})).toEqual({
      '/runs/{track_id}/logs': {
        get: {
          operationId: 'getLogs',
          summary: 'Logs',
          parameters: [
            {
              name: 'track_id',
              in: 'path',
              required: true,
              schema: { type: 'string', minLength: 26, maxLength: 26 },
            },
            {
              name: 'since',
              in: 'query',
              required: false,
              description: 'a line number',
              schema: { type: 'integer', minimum: 0 },
            },
          ],
          responses: {
            '200': {
              description: 'the lines',
              content: { 'application/json': { schema: { type: 'array' } } },
            },
          },
        },
      },
    });
  });

  it('refuse an operation declared twice', () => {
    expect(() => openApiPaths([getRun, getRun], {})).toThrow(
      'GET /runs/{track_id}/logs is declared twice',
    );
  });

  it('mount on the Koa path of the OpenAPI path, and a route left out of the document is found', () => {
    expect(koaPath('/a/{b}/c/{d_e}')).toBe('/a/:b/c/:d_e');
    const router = new Router();
    mount(router, getRun, [], async () => {});
    router.post('/runs', async () => {});
    expect(undocumentedRoutes(router, { paths: openApiPaths([getRun], {}) })).toEqual([
      'POST /runs',
    ]);
  });
});

describe('jsonSchemaOf refuses what JSON Schema cannot state', () => {
  it('a pattern with flags', () => {
    expect(() => jsonSchemaOf(Joi.string().pattern(/^[a-z]+$/i))).toThrow(
      '/^[a-z]+$/i: a JSON Schema pattern has no flags; spell the cases out',
    );
  });
});
