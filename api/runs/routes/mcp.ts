import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { mount } from '../../http/contract';
import { JSON_RPC_ERROR, MCP_REQUEST_BODY, mcpTransportResponses } from '../../mcp/contract';
import { onlyQuery, refusal, REFUSALS, runsOperation, type RunsOperation } from './operation';

/** The error envelope as JSON Schema, for a response that is one of it and another shape. */
const ERROR_BODY_SCHEMA = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
};

/** The MCP endpoint (its tools: api/runs/mcp.ts). */
export const MCP_OPERATIONS = {
  mcp: runsOperation({
    method: 'post',
    path: '/mcp',
    operationId: 'mcp',
    summary: 'MCP endpoint: the run, workflow, quota and template operations as tools',
    description:
      "The Model Context Protocol over streamable HTTP, stateless: no session id, each POST one JSON-RPC message or batch answered with JSON (GET and DELETE: 405). The bearer key is checked (and the request counted against the tenant's rate limit) before any MCP handling; no permission is needed to list the tools. A tool is one REST operation called in-process with the caller's key: its route's permission check, validation, service function and error envelope; its arguments are the operation's path parameters, query and body as one object (the input schema is generated from the same joi schemas); its result content is the REST body, exactly; a refusal is a tool error (isError) carrying the REST body ({detail}) and the HTTP status. tools/list and /llms.txt name every tool and the permission it needs.",
    extensions: { security: [{ bearer: [] }], requestBody: MCP_REQUEST_BODY },
    responses: {
      ...mcpTransportResponses(ERROR_BODY_SCHEMA),
      '400': {
        description:
          'Malformed JSON or an unknown query parameter ({detail}), or not a JSON-RPC message (JSON-RPC error -32700 or -32600).',
        schema: { oneOf: [ERROR_BODY_SCHEMA, JSON_RPC_ERROR] },
      },
      '401': refusal(REFUSALS['401']),
      '405': refusal(REFUSALS['405']),
      '413': refusal(REFUSALS['413']),
      '422': refusal('`JSON nesting deeper than <n> levels`: the body nests past the limit.'),
      '429': refusal('`rate_limited` (with `Retry-After`).'),
      '503': refusal(
        'A backend is briefly unreachable (Postgres or Redis restarting), with Retry-After.',
      ),
    },
  }),
} satisfies Record<string, RunsOperation>;

/**
 * POST /mcp: `mcp`, the MCP endpoint's handler, behind the tenant API's key and rate limit (no
 * permission: each tool call is a REST request that checks its own).
 */
export function mountMcpRoutes(router: Router, mcp: Middleware): void {
  mount(router, MCP_OPERATIONS.mcp, [onlyQuery()], mcp);
}
