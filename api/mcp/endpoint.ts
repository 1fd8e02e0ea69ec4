import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { mount, type OperationContract } from '../http/contract';
import { clientAddress } from '../http/client-address';
import type { Logger } from '../../platform/logger';
import { dispatch, toolResultOf, type RequestListener } from './dispatch';
import { restRequestOf, ToolArgumentError, type OperationTool } from './tools';

export interface McpEndpointOptions {
  /** The server's name and version in MCP's initialize answer. */
  name: string;
  version: string;
  /** Told to the client at initialize: what the tools are for, how to read their results. */
  instructions?: string;
  tools: readonly OperationTool[];
  /**
   * The app the tools call in-process (a Koa app's `callback()`): read at the first call, so the
   * router that mounts the endpoint can be built before its app.
   */
  listener: () => RequestListener;
  /** Headers of the MCP request every tool call carries to its REST route; default Authorization. */
  forwardHeaders?: readonly string[];
}

/** The MCP `Tool` of an operation tool, as tools/list lists it. */
export const listedTool = (tool: OperationTool): Tool => ({
  name: tool.name,
  title: tool.title,
  description: tool.description,
  inputSchema: tool.inputSchema as Tool['inputSchema'],
  annotations: tool.annotations,
});

/** What a tool call carries from the MCP request it came in. */
interface Caller {
  headers: Record<string, string>;
  remoteAddress?: string;
  log?: Logger;
}

/**
 * One MCP server for one HTTP request (stateless: nothing outlives the request). The low-level
 * `Server`, not `McpServer`: a tool's input schema here is the JSON Schema generated from the
 * route's joi schemas, and the arguments are validated by the route itself (its 422, with its
 * detail), where McpServer takes zod schemas and validates before the call.
 */
function mcpServer(options: McpEndpointOptions, caller: Caller): Server {
  const tools = new Map(options.tools.map((tool) => [tool.name, tool]));
  const server = new Server(
    { name: options.name, version: options.version },
    {
      capabilities: { tools: { listChanged: false } },
      ...(options.instructions ? { instructions: options.instructions } : {}),
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: options.tools.map(listedTool),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = tools.get(request.params.name);
    // MCP's answer to a tool the server does not have: a protocol error, not a tool error.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    let rest;
    try {
      rest = restRequestOf(tool, request.params.arguments ?? {});
    } catch (error) {
      if (!(error instanceof ToolArgumentError)) throw error;
      return { content: [{ type: 'text', text: error.message }], isError: true };
    }
    try {
      return toolResultOf(await dispatch(options.listener(), rest, caller));
    } catch (error) {
      // The app answers every refusal itself: this is a fault of ours, told as REST tells a 500.
      caller.log?.error({ err: error, tool: tool.name }, 'MCP tool call failed');
      throw new Error('internal error'); // JSON-RPC -32603, the cause untold as a REST 500's
    }
  });
  return server;
}

/** Headers that describe the connection, not the message: the transport does not read them. */
const HOP_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding']);

function webRequestOf(ctx: Context): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(ctx.headers)) {
    if (value === undefined || HOP_HEADERS.has(name)) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(new URL(ctx.originalUrl, 'http://mcp.invalid'), {
    method: ctx.method,
    headers,
  });
}

function callerOf(ctx: Context, forward: readonly string[]): Caller {
  const headers: Record<string, string> = {};
  for (const name of forward) {
    const value = ctx.get(name);
    if (value !== '') headers[name.toLowerCase()] = value;
  }
  const requestId = ctx.state.requestId as string | undefined;
  if (requestId) headers['x-request-id'] = requestId;
  const remoteAddress = clientAddress(ctx);
  const log = ctx.state.log as Logger | undefined;
  return { headers, ...(remoteAddress ? { remoteAddress } : {}), ...(log ? { log } : {}) };
}

/**
 * The Koa handler of an MCP endpoint: MCP's streamable HTTP, stateless (no session id; a new
 * server and transport per request) with JSON responses, on the body the app already parsed. A
 * tool call is dispatched in-process through the app to its REST route, with the caller's headers
 * (`forwardHeaders`), so the route's guard, validation, service function and error envelope are
 * the REST ones, and its result is the REST body, exactly.
 */
export function mcpEndpoint(options: McpEndpointOptions): Middleware {
  const forward = options.forwardHeaders ?? ['authorization'];
  return async function answerMcp(ctx: Context) {
    const server = mcpServer(options, callerOf(ctx, forward));
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const response = await transport.handleRequest(webRequestOf(ctx), {
        parsedBody: ctx.request.body,
      });
      const text = await response.text();
      ctx.status = response.status;
      response.headers.forEach((value, name) => {
        if (!HOP_HEADERS.has(name)) ctx.set(name, value);
      });
      // A string body keeps the transport's Content-Type (and the app leaves a string as it is).
      ctx.body = text;
      if (text === '') ctx.remove('Content-Type');
    } finally {
      await server.close();
    }
  };
}

/** Mounts an MCP endpoint at its operation's path (POST), behind the service's guards. */
export function mountMcpEndpoint(
  router: Router,
  operation: OperationContract,
  guards: Middleware[],
  options: McpEndpointOptions,
): void {
  if (operation.method !== 'post') throw new Error('an MCP endpoint is mounted on POST');
  mount(router, operation, guards, mcpEndpoint(options));
}
