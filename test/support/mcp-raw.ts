/** The first message of an MCP session, as a client sends it. */
export const MCP_INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
};

/**
 * One MCP message POSTed by hand (no SDK client), as a streamable HTTP client sends it: what the
 * MCP tests use to see the transport's own answer (status, headers, no session id).
 * `authorization` is the header's whole value (null: none); `accept` what the client takes.
 */
export const postMcp = (
  url: string,
  authorization: string | null,
  message: unknown,
  accept = 'application/json, text/event-stream',
): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: {
      ...(authorization === null ? {} : { authorization }),
      'content-type': 'application/json',
      accept,
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify(message),
  });
