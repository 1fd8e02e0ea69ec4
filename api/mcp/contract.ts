import type { JsonSchema } from '../http/json-schema';
import type { ResponseContract } from '../http/contract';

/**
 * How an OpenAPI document describes an MCP endpoint (POST, streamable HTTP, stateless, JSON
 * responses): its JSON-RPC request body and the answers of the transport itself. A service adds
 * its own refusals (auth, rate limit, body parser) in its own envelope.
 */

/** A JSON-RPC 2.0 message (MCP's), or a batch of them: described, not validated here. */
export const JSON_RPC_MESSAGE: JsonSchema = {
  type: 'object',
  properties: {
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer'] },
    method: { type: 'string' },
    params: { type: 'object' },
    result: { type: 'object' },
    error: {
      type: 'object',
      properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} },
      required: ['code', 'message'],
    },
  },
  required: ['jsonrpc'],
};

/** A JSON-RPC error the transport answers before any handling (no request id). */
export const JSON_RPC_ERROR: JsonSchema = {
  ...JSON_RPC_MESSAGE,
  properties: { ...(JSON_RPC_MESSAGE.properties as JsonSchema), id: { type: 'null' } },
  required: ['jsonrpc', 'error'],
};

const MESSAGES: JsonSchema = {
  oneOf: [JSON_RPC_MESSAGE, { type: 'array', items: JSON_RPC_MESSAGE }],
};

/** The `requestBody` of an MCP endpoint's operation (an OpenAPI extension of the contract). */
export const MCP_REQUEST_BODY = {
  required: true,
  content: { 'application/json': { schema: MESSAGES } },
};

/**
 * The answers of the streamable HTTP transport, stateless with JSON responses. `errorBody` is the
 * service's error envelope, for the 415 its body parser answers to a body of another type.
 */
export function mcpTransportResponses(errorBody: JsonSchema): Record<string, ResponseContract> {
  return {
    '200': {
      description: 'the JSON-RPC response (or the responses of a batch)',
      schema: MESSAGES,
    },
    '202': { description: 'notifications or responses only: accepted, no body' },
    '406': {
      description: 'Accept must name application/json and text/event-stream',
      schema: JSON_RPC_ERROR,
    },
    '415': {
      description:
        "Content-Type must be application/json: the service's error for a body of another type, a JSON-RPC error for one without a type",
      schema: { oneOf: [errorBody, JSON_RPC_ERROR] },
    },
  };
}
