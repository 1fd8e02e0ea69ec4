import type { IncomingMessage, ServerResponse } from 'node:http';
import inject from 'light-my-request';
import type { RestRequest } from './tools';

/** A Node request listener: a Koa app's `callback()`. */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** What the REST route answered, its body as the exact text it wrote. */
export interface RestReply {
  status: number;
  statusMessage: string;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

export interface DispatchOptions {
  /** Headers of the caller's request the REST request carries (Authorization, a request id). */
  headers: Record<string, string>;
  /** The caller's address, so the REST request is the caller's in every respect. */
  remoteAddress?: string;
}

/**
 * Makes a REST request in-process, with no socket: the request goes through the whole app (its
 * body parser, guard, validation, handler and error envelope) exactly as one from the network.
 */
export async function dispatch(
  listener: RequestListener,
  request: RestRequest,
  options: DispatchOptions,
): Promise<RestReply> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  const response = await inject(listener, {
    method: request.method as 'GET',
    url: request.url,
    headers,
    ...(request.body !== undefined ? { payload: request.body } : {}),
    ...(options.remoteAddress ? { remoteAddress: options.remoteAddress } : {}),
  });
  return {
    status: response.statusCode,
    statusMessage: response.statusMessage,
    headers: response.headers,
    body: response.payload,
  };
}

/** The MCP tool result of a REST reply (`CallToolResult`). */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  isError?: boolean;
  _meta: { httpStatus: number };
}

/** Headers a client acts on after a refusal: when to retry, which scope was missing. */
const TOLD_HEADERS = ['retry-after', 'www-authenticate', 'allow'];

/** `HTTP 403 Forbidden (WWW-Authenticate: ...)`: the status of a reply and its telling headers. */
export function statusLine(reply: RestReply): string {
  const told = TOLD_HEADERS.flatMap((name) => {
    const value = reply.headers[name];
    return value === undefined ? [] : [`${name}: ${String(value)}`];
  });
  const line = `HTTP ${reply.status} ${reply.statusMessage}`.trim();
  return told.length > 0 ? `${line} (${told.join('; ')})` : line;
}

/**
 * A REST reply as a tool result: the first content item is the REST body, exactly as the route
 * wrote it (never parsed and written again: a counter can pass 2^53). A refusal (status >= 400) is
 * a tool error whose body carries the service's error code, and a second item says the status.
 * `_meta.httpStatus` is the status in every case.
 */
export function toolResultOf(reply: RestReply): ToolResult {
  const refused = reply.status >= 400;
  const content: ToolResult['content'] = [];
  if (reply.body !== '') content.push({ type: 'text', text: reply.body });
  if (refused || reply.body === '') content.push({ type: 'text', text: statusLine(reply) });
  return {
    content,
    ...(refused ? { isError: true } : {}),
    _meta: { httpStatus: reply.status },
  };
}
