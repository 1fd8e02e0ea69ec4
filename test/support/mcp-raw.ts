/**
 * One MCP message POSTed by hand (no SDK client), as a streamable HTTP client sends it: what the
 * MCP tests use to see the transport's own answer (status, headers, no session id).
 */
export const postMcp = (url: string, key: string, message: unknown): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify(message),
  });
