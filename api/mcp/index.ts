export {
  operationTool,
  operationTools,
  restRequestOf,
  toolInputOf,
  ToolArgumentError,
  type ArgumentLocation,
  type OperationTool,
  type OperationToolSpec,
  type RestRequest,
  type ToolAnnotations,
  type ToolInput,
} from './tools';
export {
  dispatch,
  statusLine,
  toolResultOf,
  type RequestListener,
  type RestReply,
  type ToolResult,
} from './dispatch';
export { listedTool, mcpEndpoint, mountMcpEndpoint, type McpEndpointOptions } from './endpoint';
export {
  JSON_RPC_ERROR,
  JSON_RPC_MESSAGE,
  MCP_REQUEST_BODY,
  mcpTransportResponses,
} from './contract';
