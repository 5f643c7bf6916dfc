/**
 * The dev server's MCP endpoint (`/mcp`), over Streamable HTTP. The dev server loads this module on the
 * first request to `/mcp` only, so a `service-webhooks dev` no agent talks to never evaluates the SDK.
 *
 * @packageDocumentation
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { sendJson } from '../sandbox/http-io.js';
import { createMcpTools, type McpToolsContext } from './mcp-tools.js';

/** The largest request body read: the sandbox's own request limit (`MAX_REQUEST_BYTES`). */
const MAX_BODY_BYTES = 1_048_576;

/**
 * Answer one request to `/mcp`, already past the Host/Origin guard and the token check. Stateless: a
 * server and a transport for this request alone, closed with its response. What an agent changes lives
 * in the dev server (its deliveries, the inbox), never in a session, so no session id is handed out and
 * any number of agents may call at once. Answers are plain JSON, not an event stream: no tool reports
 * progress. GET (a stream of server-sent notifications) and DELETE (ending a session) have nothing to
 * serve without sessions: 405, as the transport's specification allows.
 *
 * @example
 * ```ts
 * if (url.pathname === '/mcp') return answerMcp(tools, request, response);
 * ```
 */
export async function answerMcp(
  tools: McpToolsContext,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<number> {
  if (request.method !== 'POST') {
    sendJson(
      response,
      405,
      {
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; POST only.' },
        id: null,
      },
      { allow: 'POST' },
    );
    return 405;
  }
  const server = createMcpTools(tools);
  const transport = new StreamableHTTPServerTransport({
    // No sessionIdGenerator: stateless.
    enableJsonResponse: true,
    maxRequestBodySize: MAX_BODY_BYTES,
  });
  response.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(request, response);
  return response.statusCode;
}
