/* eslint-disable @typescript-eslint/no-unsafe-assignment -- jest's asymmetric matchers */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import Router from '@koa/router';
import Joi from 'joi';
import type { Context } from 'koa';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createApp } from '../../../api/http/app';
import { mount, type OperationContract } from '../../../api/http/contract';
import { createLogger } from '../../../platform/logger';
import { PLATFORM_ERRORS, RequestValidationError } from '../../../platform/errors';
import {
  mountMcpEndpoint,
  operationTools,
  restRequestOf,
  toolInputOf,
  toolResultOf,
  ToolArgumentError,
  type OperationTool,
} from '../../../api/mcp';

const item = Joi.object({ resource: Joi.string().required(), amount: Joi.number().integer() }).id(
  'Item',
);
const COMMIT: OperationContract = {
  method: 'post',
  path: '/v1/things/{thing_id}/commit',
  operationId: 'commitThing',
  summary: 'Commit a thing',
  description: 'It stays committed.',
  request: {
    params: Joi.object({ thing_id: Joi.string().max(10).required() }),
    query: Joi.object({ dry_run: Joi.boolean() }),
    body: Joi.object({ items: Joi.array().items(item).required(), note: Joi.string() }).id(
      'CommitBody',
    ),
  },
  responses: { '200': { description: 'done' } },
};
const LIST: OperationContract = {
  method: 'get',
  path: '/v1/things',
  operationId: 'listThings',
  summary: 'The things',
  request: {
    query: Joi.object({ tag: Joi.array().items(Joi.string()).single(), limit: Joi.number() }),
  },
  responses: { '200': { description: 'the things' } },
};

const toolOf = (operation: OperationContract): OperationTool =>
  operationTools([{ name: 'a_tool', operation, annotations: { readOnlyHint: true } }])[0]!;

describe('toolInputOf: the path parameters, query and body of an operation as one object', () => {
  it('merges the parts, requires path parameters, and moves named schemas to $defs', () => {
    const { schema, locations } = toolInputOf(COMMIT.request);
    expect(locations).toEqual({
      thing_id: 'params',
      dry_run: 'query',
      items: 'body',
      note: 'body',
    });
    expect(schema).toEqual({
      type: 'object',
      properties: {
        thing_id: { type: 'string', minLength: 1, maxLength: 10 },
        dry_run: { type: 'boolean' },
        items: { type: 'array', items: { $ref: '#/$defs/Item' } },
        note: { type: 'string', minLength: 1 },
      },
      required: ['thing_id', 'items'],
      additionalProperties: false,
      $defs: {
        Item: {
          type: 'object',
          properties: {
            resource: { type: 'string', minLength: 1 },
            amount: { type: 'integer' },
          },
          required: ['resource'],
          additionalProperties: false,
        },
      },
    });
  });

  it('keeps a body rule over several fields (if/then) and follows references between definitions', () => {
    const inner = Joi.object({ n: Joi.number() }).id('Inner');
    const outer = Joi.object({ inner }).id('Outer');
    const body = Joi.object({ kind: Joi.string(), outer }).meta({
      'x-schema': { if: { properties: { kind: { const: 'x' } } }, then: { required: ['outer'] } },
    });
    const { schema } = toolInputOf({ body });
    expect(schema.allOf).toEqual([
      { if: { properties: { kind: { const: 'x' } } }, then: { required: ['outer'] } },
    ]);
    expect(schema.properties).toMatchObject({ outer: { $ref: '#/$defs/Outer' } });
    expect(schema.$defs).toEqual({
      Outer: expect.objectContaining({ properties: { inner: { $ref: '#/$defs/Inner' } } }),
      Inner: expect.objectContaining({ properties: { n: { type: 'number' } } }),
    });
  });

  it('allows unknown arguments where the body (else the query) allows unknown keys', () => {
    expect(toolInputOf({ body: Joi.object().unknown(true) }).schema.additionalProperties).toBe(
      true,
    );
    expect(toolInputOf({ query: Joi.object({ a: Joi.string() }) }).schema).toMatchObject({
      additionalProperties: false,
    });
    expect(toolInputOf(undefined).schema).toEqual({
      type: 'object',
      properties: {},
      additionalProperties: false,
    });
  });

  it('refuses a name in two parts, and a body that is not an object', () => {
    expect(() =>
      toolInputOf({
        params: Joi.object({ id: Joi.string() }),
        body: Joi.object({ id: Joi.string() }),
      }),
    ).toThrow('argument id is in both params and body');
    expect(() => toolInputOf({ body: Joi.array().items(Joi.string()) })).toThrow('not an object');
  });
});

describe('operationTools', () => {
  it('describes each tool from its operation, with the words the service adds', () => {
    const [tool] = operationTools(
      [{ name: 'commit_thing', operation: COMMIT, annotations: { destructiveHint: true } }],
      () => 'Requires scope `things`.',
    );
    expect(tool).toMatchObject({
      name: 'commit_thing',
      title: 'Commit a thing',
      description:
        'Commit a thing. Requires scope `things`. It stays committed. REST: POST /v1/things/{thing_id}/commit.',
      annotations: { destructiveHint: true },
    });
  });

  it('refuses a name twice, or one that is not snake_case', () => {
    const spec = { name: 'a', operation: LIST, annotations: {} };
    expect(() => operationTools([spec, spec])).toThrow('declared twice');
    expect(() => operationTools([{ ...spec, name: 'listThings' }])).toThrow('snake_case');
  });
});

describe('restRequestOf: the REST request of a tool call', () => {
  it('puts each argument where its part says: path encoded, query as text, the rest as the body', () => {
    expect(
      restRequestOf(toolOf(COMMIT), {
        thing_id: 'a/b c',
        dry_run: true,
        items: [{ resource: 'r', amount: 1 }],
      }),
    ).toEqual({
      method: 'POST',
      url: '/v1/things/a%2Fb%20c/commit?dry_run=true',
      body: '{"items":[{"resource":"r","amount":1}]}',
    });
  });

  it('sends undeclared arguments to the body, or the query, so the route refuses them as REST does', () => {
    expect(restRequestOf(toolOf(COMMIT), { thing_id: 't', extra: 1 }).body).toBe('{"extra":1}');
    expect(
      restRequestOf(toolOf(LIST), { tag: ['a', 'b'], limit: 5, other: 'x', none: null }),
    ).toEqual({ method: 'GET', url: '/v1/things?tag=a&tag=b&limit=5&other=x' });
  });

  it('answers a tool error for a missing path parameter (there is no route without it)', () => {
    expect(() => restRequestOf(toolOf(COMMIT), { items: [] })).toThrow(ToolArgumentError);
    expect(() => restRequestOf(toolOf(COMMIT), { thing_id: '' })).toThrow(ToolArgumentError);
  });
});

describe('toolResultOf: a REST reply as a tool result', () => {
  it('is the REST body exactly, integers past 2^53 included', () => {
    const body = '{"used":9007199254740993}';
    expect(toolResultOf({ status: 200, statusMessage: 'OK', headers: {}, body })).toEqual({
      content: [{ type: 'text', text: body }],
      _meta: { httpStatus: 200 },
    });
  });

  it('is a tool error for a refusal: the REST body and the status with its telling headers', () => {
    const reply = {
      status: 403,
      statusMessage: 'Forbidden',
      headers: { 'www-authenticate': 'Bearer error="insufficient_scope"', 'x-other': '1' },
      body: '{"detail":"insufficient_scope"}',
    };
    expect(toolResultOf(reply)).toEqual({
      content: [
        { type: 'text', text: '{"detail":"insufficient_scope"}' },
        {
          type: 'text',
          text: 'HTTP 403 Forbidden (www-authenticate: Bearer error="insufficient_scope")',
        },
      ],
      isError: true,
      _meta: { httpStatus: 403 },
    });
  });

  it('says the status of an answer without a body', () => {
    expect(
      toolResultOf({ status: 204, statusMessage: 'No Content', headers: {}, body: '' }).content,
    ).toEqual([{ type: 'text', text: 'HTTP 204 No Content' }]);
  });
});

describe('mountMcpEndpoint: tools that call their routes in-process, through the app', () => {
  let server: Server;
  let url: URL;
  const echo = (ctx: Context) => {
    if (ctx.get('authorization') !== 'Bearer good') {
      ctx.status = 401;
      ctx.body = { detail: 'unauthorized' };
      return;
    }
    ctx.body = {
      params: (ctx as Context & { params: unknown }).params,
      query: ctx.query,
      body: ctx.request.body ?? null,
      requestId: ctx.get('x-request-id'),
    };
  };
  beforeAll(async () => {
    const router = new Router();
    mount(router, COMMIT, [], echo);
    mount(router, LIST, [], (ctx) => {
      ctx.type = 'application/json';
      ctx.body = '{"big":9007199254740993}';
    });
    const tools = operationTools([
      { name: 'commit_thing', operation: COMMIT, annotations: { destructiveHint: true } },
      { name: 'list_things', operation: LIST, annotations: { readOnlyHint: true } },
    ]);
    const mcpOperation: OperationContract = {
      method: 'post',
      path: '/mcp',
      operationId: 'mcp',
      summary: 'MCP',
      responses: { '200': { description: 'JSON-RPC' } },
    };
    mountMcpEndpoint(router, mcpOperation, [], {
      name: 'test',
      version: '1.0.0',
      tools,
      listener: () => app.callback(),
    });
    const { app } = createApp({
      service: 'test',
      trustedProxies: [],
      logger: createLogger('silent'),
      envelope: (error) =>
        error instanceof RequestValidationError
          ? { detail: error.issues }
          : { detail: error.code.toLowerCase() },
      errors: PLATFORM_ERRORS,
      body: { limitBytes: 1024 * 1024, maxDepth: 32 },
      routers: [router],
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp/`);
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  async function connected(authorization: string) {
    const client = new Client({ name: 'unit', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization } } }),
    );
    return client;
  }

  it('lists the tools with their input schemas and annotations', async () => {
    const client = await connected('Bearer good');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['commit_thing', 'list_things']);
    expect(tools[0]).toMatchObject({
      inputSchema: { required: ['thing_id', 'items'] },
      annotations: { destructiveHint: true },
    });
    await client.close();
  });

  it("calls the route with the caller's key and the arguments in their places", async () => {
    const client = await connected('Bearer good');
    const result = await client.callTool({
      name: 'commit_thing',
      arguments: { thing_id: 'x/y', dry_run: false, items: [{ resource: 'r', amount: 2 }] },
    });
    expect(result.isError).toBeUndefined();
    const [content] = result.content as { text: string }[];
    expect(JSON.parse(content!.text)).toMatchObject({
      params: { thing_id: 'x/y' },
      query: { dry_run: 'false' },
      body: { items: [{ resource: 'r', amount: 2 }] },
      requestId: expect.any(String),
    });
    const list = await client.callTool({ name: 'list_things', arguments: {} });
    expect(list.content).toEqual([{ type: 'text', text: '{"big":9007199254740993}' }]);
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({
      code: -32602,
    });
    await client.close();
  });

  it("answers the route's refusals as tool errors", async () => {
    const client = await connected('Bearer bad');
    const refused = await client.callTool({
      name: 'commit_thing',
      arguments: { thing_id: 'x', items: [] },
    });
    expect(refused).toMatchObject({
      isError: true,
      content: [
        { type: 'text', text: '{"detail":"unauthorized"}' },
        { type: 'text', text: 'HTTP 401 Unauthorized' },
      ],
    });
    await client.close();
    const good = await connected('Bearer good');
    const invalid = await good.callTool({
      name: 'commit_thing',
      arguments: { thing_id: 'x'.repeat(11), items: [] },
    });
    expect(invalid).toMatchObject({ isError: true, _meta: { httpStatus: 422 } });
    expect((invalid.content as { text: string }[])[0]!.text).toContain('thing_id');
    await good.close();
  });

  it('is stateless: GET is 405', async () => {
    const response = await fetch(url, { headers: { accept: 'text/event-stream' } });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });
});
