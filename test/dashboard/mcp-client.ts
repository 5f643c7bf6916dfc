/**
 * The dev server's MCP endpoint as an agent reaches it: the SDK's own Client over its Streamable HTTP
 * client transport, with the dashboard's token header. Every answer is kept, so a test can scan all of
 * them (for the webhook secret) at the end.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEV_TOKEN_HEADER } from '../../src/dev/report.js';

/** One tool's answer: its text, parsed as JSON when it is JSON, and whether it is an error. */
export interface ToolCall {
  readonly isError: boolean;
  readonly text: string;
  readonly json: unknown;
}

export interface McpTestClient {
  readonly client: Client;
  /** Every text any tool answered so far, errors included. */
  readonly answers: string[];
  call<T = unknown>(name: string, args?: Record<string, unknown>): Promise<ToolCall & { json: T }>;
  close(): Promise<void>;
}

export async function connectMcp(url: string, token: string): Promise<McpTestClient> {
  const client = new Client({ name: 'service-webhooks-tests', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { [DEV_TOKEN_HEADER]: token } },
  });
  await client.connect(transport);
  const answers: string[] = [];
  return {
    client,
    answers,
    async call<T>(name: string, args: Record<string, unknown> = {}) {
      const result = await client.callTool({ name, arguments: args });
      const content = result.content as { type: string; text?: string }[];
      const text = content.map((part) => part.text ?? '').join('');
      answers.push(text);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { isError: result.isError === true, text, json: json as T };
    },
    close: () => client.close(),
  };
}

/** Poll until `check` holds (an agent polls the same way: no tool waits). */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
