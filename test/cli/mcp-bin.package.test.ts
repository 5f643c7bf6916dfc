/**
 * The MCP endpoint of the built bin, as a user's agent reaches it: `service-webhooks dev` from dist/cli.js
 * with a fixed token from SERVICE_WEBHOOKS_DEV_TOKEN, the SDK's client over Streamable HTTP. What only
 * the build can break is checked here: the endpoint's chunk (dist/cli-chunks/) loads on the first call
 * and not before, and `search_docs` reads the Markdown copies the build put in dist/docs.
 */
import { readdir, readFile } from 'node:fs/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { connectMcp, eventually, type McpTestClient } from '../dashboard/mcp-client.js';
import { startReceiver, type TestReceiver } from '../dashboard/support.js';
import { distPath, ROOT } from '../support/paths.js';
import { type SpawnedProcess, startProcess } from '../support/process.js';
import { CLI, requireBuiltCli } from './support.js';

const SECRET = 'whsec_mcp_bin_secret';
const TOKEN = 'mcp-bin-token-0123456789';

let receiver: TestReceiver;
let dev: SpawnedProcess & { readonly match: RegExpMatchArray };
let mcpUrl: string;
let mcp: McpTestClient | undefined;

beforeAll(async () => {
  requireBuiltCli();
  receiver = await startReceiver(SECRET);
  dev = await startProcess(
    process.execPath,
    [CLI, 'dev', '--forward', receiver.url, '--secret', SECRET, '--port', '0', '--in-memory'],
    {
      name: 'service-webhooks dev',
      cwd: ROOT,
      env: { SERVICE_WEBHOOKS_DEV_TOKEN: TOKEN },
      ready: /MCP \(agents\)\s+(http:\S+\/mcp) \(header x-service-webhooks-dev-token: (\S+?)\)/,
      timeoutMs: 30_000,
    },
  );
  mcpUrl = dev.match[1]!;
  expect(dev.match[2]).toBe(TOKEN);
}, 60_000);

afterAll(async () => {
  await mcp?.close();
  await dev?.stop();
  await receiver?.close();
});

test('the bin keeps the MCP SDK out of its own file: the endpoint is a chunk loaded on demand', async () => {
  const bin = await readFile(CLI, 'utf8');
  expect(bin).not.toContain('StreamableHTTPServerTransport');
  const chunks = await readdir(distPath('cli-chunks'));
  const endpoint = chunks.find((name) => name.startsWith('mcp-endpoint-'));
  expect(endpoint).toBeDefined();
  expect(await readFile(distPath('cli-chunks', endpoint!), 'utf8')).toContain(
    'StreamableHTTPServerTransport',
  );
});

test('an agent sends an event, reads it delivered, and searches the docs the package ships', async () => {
  mcp = await connectMcp(mcpUrl, TOKEN);
  const { tools } = await mcp.client.listTools();
  expect(tools.length).toBe(15);
  expect(mcp.client.getServerVersion()?.version).toBe(
    JSON.parse(await readFile(`${ROOT}package.json`, 'utf8')).version,
  );

  const sent = await mcp.call<{ deliveries: { id: string }[] }>('send_event', { type: 'project.created' });
  const id = sent.json.deliveries[0]!.id;
  const delivered = await eventually('the delivery', async () => {
    const { json } = await mcp!.call<{ status: string; attempts: { status: number }[] }>('get_delivery', {
      delivery_id: id,
    });
    return json.status === 'succeeded' ? json : undefined;
  });
  expect(delivered.attempts[0]!.status).toBe(200);

  const found = await mcp.call<{ results: { path: string }[] }>('search_docs', { query: 'fastify plugin' });
  expect(found.json.results.map((hit) => hit.path)).toContain('frameworks/fastify.md');
  const page = await mcp.call('read_doc', { path: 'tools/agents.md' });
  expect(page.text).toContain('x-service-webhooks-dev-token');
  for (const text of mcp.answers) expect(text).not.toContain(SECRET);
}, 60_000);
