/**
 * The dev server's MCP endpoint, driven as a coding agent drives it: the SDK's own Client over
 * Streamable HTTP against a real dev server delivering to a real receiver (node:http) that reports
 * through devReporter. Every tool is called; the dead-letter tools over a real inbox are in
 * test/inbox/dev-mcp.test.ts. The retries run on the real schedule (time scale 1, a minute before the
 * first retry), so a retry that comes within the test came from `retry_now`.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWebhooks, type DeliveryRecord, type WebhookLogger } from 'service-webhooks';
import { devReporter } from 'service-webhooks/dev';
import { nodeHandler } from 'service-webhooks/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevAttempt, DevDelivery } from '../../src/dashboard/api-types.js';
import type { DevServer } from '../../src/dashboard/dev-server.js';
import { MCP_TOOL_NAMES, REDACTED_SECRET } from '../../src/dashboard/mcp-tools.js';
import { DEV_TOKEN_HEADER } from '../../src/dev/report.js';
import { repoPath } from '../support/paths.js';
import { connectMcp, eventually, type McpTestClient } from './mcp-client.js';
import { startTestDevServer } from './support.js';

const SECRET = 'whsec_mcp_test_secret_never_shown';
const TOKEN = 'mcp-test-token-of-some-length';
const REPORT_TOKEN = 'mcp-report-token-of-some-length';

// The receiver exists before the dev server, and the reporter needs the server's address: a relay.
let reporter: WebhookLogger | undefined;
const relay: WebhookLogger = {
  info: (record: DeliveryRecord, message?: string) => reporter?.info(record, message),
  warn: (record: DeliveryRecord, message?: string) => reporter?.warn(record, message),
  error: (record: DeliveryRecord, message?: string) => reporter?.error(record, message),
};

/** Event ids whose next run fails; a failure's message quotes the secret, as careless code might. */
const failNext = new Set<string>();
const runs = new Map<string, number>();

let receiver: Server;
let dev: DevServer;
let mcp: McpTestClient;

beforeAll(async () => {
  const webhooks = createWebhooks({ secret: SECRET, logger: relay });
  webhooks.onAny((event) => {
    runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
    if (failNext.delete(event.id)) throw new Error(`the CRM refused us (we signed with ${SECRET})`);
  });
  webhooks.onError(() => {});
  receiver = createServer(nodeHandler(webhooks));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  dev = await startTestDevServer('dev-mcp', {
    forward: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`,
    secret: SECRET,
    timeScale: 1,
    token: TOKEN,
    reportToken: REPORT_TOKEN,
    docsFolder: repoPath('docs'),
    version: '9.9.9',
  });
  reporter = devReporter({ url: dev.reportUrl });
  mcp = await connectMcp(dev.mcpUrl, TOKEN);
});

afterAll(async () => {
  await mcp?.close();
  await dev?.close();
  await new Promise<void>((resolve) => {
    if (receiver === undefined) return resolve();
    receiver.close(() => resolve());
    receiver.closeAllConnections();
  });
});

/** The delivery once `done` holds for it, read through `get_delivery` as an agent would poll. */
function deliveryWhen(id: string, done: (delivery: DevDelivery) => boolean): Promise<DevDelivery> {
  return eventually(`delivery ${id}`, async () => {
    const { json } = await mcp.call<DevDelivery>('get_delivery', { delivery_id: id });
    return done(json) ? json : undefined;
  });
}

const reported = (count: number) => (delivery: DevDelivery) =>
  !delivery.in_flight &&
  delivery.attempts.length === count &&
  delivery.attempts.every((attempt) => attempt.receiver !== null);

describe('the tools', () => {
  it('lists every tool, each with a JSON schema for its input', async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([...MCP_TOOL_NAMES]);
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).toBe('object');
      expect(tool.description?.length ?? 0, tool.name).toBeGreaterThan(40);
    }
    const send = tools.find((tool) => tool.name === 'send_event')!;
    expect(Object.keys(send.inputSchema.properties ?? {}).sort()).toEqual(['case', 'event', 'type']);
    expect(mcp.client.getServerVersion()).toMatchObject({ name: 'service-webhooks-dev', version: '9.9.9' });
  });

  it('get_status says where events go and the report address, without the secret', async () => {
    const { json } = await mcp.call<Record<string, unknown>>('get_status');
    expect(json).toMatchObject({ forward: expect.stringContaining('/webhooks'), time_scale: 1, inbox: null });
    expect(json.report_url).toBe(dev.reportUrl);
    expect(json.event_types).toContain('user.created');
    expect(json).not.toHaveProperty('secret_hint');
  });

  it("send_event, then get_delivery and get_attempt: the failure's own message from the receiver's report, then the retry sent now", async () => {
    const sample = await mcp.call<{ id: string; type: string }>('get_sample_event', { type: 'user.created' });
    expect(sample.json).toMatchObject({ type: 'user.created', id: expect.stringMatching(/^evt_/) });
    failNext.add(sample.json.id);
    const sent = await mcp.call<{ deliveries: { id: string; label: string }[] }>('send_event', {
      event: sample.json,
    });
    expect(sent.isError).toBe(false);
    const [made] = sent.json.deliveries;
    expect(made!.label).toBe('sent');

    const failed = await deliveryWhen(made!.id, reported(1));
    expect(failed.status).toBe('pending');
    expect(failed.attempts[0]).toMatchObject({ status: 500, code: 'handler_failed' });
    // The sender waits a minute (time scale 1) before the retry.
    expect(Date.parse(failed.next_attempt_at!) - Date.now()).toBeGreaterThan(30_000);

    const attempt = await mcp.call<DevAttempt & { handler_error: string }>('get_attempt', {
      delivery_id: made!.id,
      attempt: 1,
    });
    expect(attempt.json.handler_error).toBe(`Error: the CRM refused us (we signed with ${REDACTED_SECRET})`);
    expect(attempt.json.receiver).toMatchObject({
      outcome: 'failed',
      code: 'handler_failed',
      eventId: sample.json.id,
    });

    const listed = await mcp.call<{ deliveries: { id: string; last_answer: { handler_error: string } }[] }>(
      'list_deliveries',
      { status: 'pending' },
    );
    expect(listed.json.deliveries.map((delivery) => delivery.id)).toContain(made!.id);

    const retried = await mcp.call<{ retried: boolean }>('retry_now', { delivery_id: made!.id });
    expect(retried.json).toMatchObject({ retried: true });
    const done = await deliveryWhen(
      made!.id,
      (delivery) => delivery.status === 'succeeded' && reported(2)(delivery),
    );
    expect(done.attempts.map((a) => [a.attempt, a.status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
    expect(runs.get(sample.json.id)).toBe(2);

    const again = await mcp.call('retry_now', { delivery_id: made!.id });
    expect(again).toMatchObject({ isError: true, text: expect.stringMatching(/^no_retry_scheduled: /) });
    const missing = await mcp.call('retry_now', { delivery_id: 'dlv_missing' });
    expect(missing).toMatchObject({ isError: true, text: expect.stringMatching(/^delivery_not_found: /) });
  });

  it('send_event of a type and of a case, replay_delivery as a duplicate, and list_deliveries filtered', async () => {
    const sent = await mcp.call<{ deliveries: { id: string; event_id: string }[] }>('send_event', {
      type: 'payment.succeeded',
    });
    const [first] = sent.json.deliveries;
    await deliveryWhen(first!.id, (delivery) => delivery.status === 'succeeded');

    const replayed = await mcp.call<{ deliveries: { id: string; label: string; event_id: string }[] }>(
      'replay_delivery',
      { delivery_id: first!.id },
    );
    expect(replayed.json.deliveries[0]).toMatchObject({ label: 'replay', event_id: first!.event_id });
    const duplicate = await deliveryWhen(replayed.json.deliveries[0]!.id, (d) => d.status === 'succeeded');
    expect(duplicate.attempts[0]).toMatchObject({ status: 200, duplicate: true });
    expect(runs.get(first!.event_id)).toBe(1);

    const forged = await mcp.call<{ deliveries: { id: string; label: string }[] }>('send_event', {
      type: 'user.deleted',
      case: 'forged_signature',
    });
    const refused = await deliveryWhen(forged.json.deliveries[0]!.id, (d) => d.status === 'failed');
    expect(refused.attempts[0]).toMatchObject({ status: 401 });

    const byEvent = await mcp.call<{ total: number; deliveries: { label: string }[] }>('list_deliveries', {
      event_id: first!.event_id,
    });
    expect(byEvent.json.total).toBe(2);
    expect(byEvent.json.deliveries.map((delivery) => delivery.label)).toEqual(['replay', 'sent']);

    const bad = await mcp.call('send_event', {});
    expect(bad).toMatchObject({ isError: true, text: expect.stringMatching(/^invalid_request: /) });
    const unknownType = await mcp.call('send_event', { type: 'no.such.type' });
    expect(unknownType.isError).toBe(true);
  });

  it('export_delivery as a test and as a fixture', async () => {
    const sent = await mcp.call<{ deliveries: { id: string; event_id: string }[] }>('send_event', {
      type: 'user.updated',
    });
    const id = sent.json.deliveries[0]!.id;
    await deliveryWhen(id, (delivery) => delivery.status === 'succeeded');
    const test = await mcp.call<{ name: string; content: string }>('export_delivery', { delivery_id: id });
    expect(test.json.name).toMatch(/^user-updated-evt_.+\.test\.ts$/);
    expect(test.json.content).toContain("import { deliver } from 'service-webhooks/testing';");
    expect(test.json.content).toContain(sent.json.deliveries[0]!.event_id);
    const fixture = await mcp.call<{ name: string; content: string }>('export_delivery', {
      delivery_id: id,
      as: 'fixture',
    });
    expect(JSON.parse(fixture.json.content)).toMatchObject({ attempts: [{ attempt: 1, answer: '200' }] });
  });

  it('the dead-letter tools say there is no inbox when the server was started without one', async () => {
    for (const [name, args] of [
      ['list_dead_letters', {}],
      ['get_dead_letter', { job_id: '1' }],
      ['replay_dead_letter', { job_id: '1' }],
      ['remove_dead_letter', { job_id: '1' }],
    ] as const) {
      const answer = await mcp.call(name, args);
      expect(answer, name).toMatchObject({ isError: true, text: expect.stringMatching(/^no_inbox: /) });
    }
  });

  it('search_docs finds the pages, read_doc reads one as a reader sees it, and only pages of the docs', async () => {
    const found = await mcp.call<{ results: { path: string; excerpts: unknown[] }[] }>('search_docs', {
      query: 'rotate secret',
    });
    expect(found.json.results[0]?.path).toBe('recipes/secret-rotation.md');
    expect(found.json.results[0]?.excerpts.length).toBeGreaterThan(0);
    const redis = await mcp.call<{ results: { path: string }[] }>('search_docs', {
      query: 'redis store',
      limit: 3,
    });
    expect(redis.json.results.map((hit) => hit.path)).toContain('stores/redis.md');

    const page = await mcp.call('read_doc', { path: 'guide/getting-started.md' });
    expect(page.text).toMatch(/^# /);
    expect(page.text).not.toContain('// ---cut---');
    for (const path of ['../package.json', '/etc/passwd', 'guide/nope.md']) {
      const refused = await mcp.call('read_doc', { path });
      expect(refused, path).toMatchObject({
        isError: true,
        text: expect.stringMatching(/^page_not_found: /),
      });
    }
  });

  it("no tool's answer ever holds the webhook secret (every answer of this file, errors included)", () => {
    expect(mcp.answers.length).toBeGreaterThan(25);
    for (const text of mcp.answers) expect(text).not.toContain(SECRET);
    // The scan is not vacuous: the receiver did report the secret, and it was redacted.
    expect(mcp.answers.some((text) => text.includes(REDACTED_SECRET))).toBe(true);
  });
});

/** A raw request, with headers fetch will not let a test set (`Host`). */
function raw(
  path: string,
  headers: Record<string, string>,
  method = 'POST',
): Promise<{ status: number; body: string }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  return new Promise((resolve, reject) => {
    const call = request(
      {
        host: '127.0.0.1',
        port: dev.port,
        path,
        method,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    call.on('error', reject);
    call.end(method === 'POST' ? body : undefined);
  });
}

describe('the guard', () => {
  const host = () => `127.0.0.1:${dev.port}`;

  it('answers a request with the token, for this host', async () => {
    const answer = await raw('/mcp', { host: host(), [DEV_TOKEN_HEADER]: TOKEN });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).result.tools.length).toBe(MCP_TOOL_NAMES.length);
  });

  it('refuses another Host (DNS rebinding) and another Origin with 403, token or not', async () => {
    const rebound = await raw('/mcp', { host: `evil.example:${dev.port}`, [DEV_TOKEN_HEADER]: TOKEN });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.code).toBe('host_not_allowed');
    const page = await raw('/mcp', {
      host: host(),
      origin: 'http://evil.example',
      [DEV_TOKEN_HEADER]: TOKEN,
    });
    expect(page.status).toBe(403);
    expect(JSON.parse(page.body).error.code).toBe('origin_not_allowed');
  });

  it('refuses no token or a wrong one with 401, and the report token with 403 insufficient_scope', async () => {
    for (const headers of [{}, { [DEV_TOKEN_HEADER]: 'not-the-token-at-all' }]) {
      const answer = await raw('/mcp', { host: host(), ...headers });
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.body).error.code).toBe('invalid_token');
    }
    const report = await raw('/mcp', { host: host(), [DEV_TOKEN_HEADER]: REPORT_TOKEN });
    expect(report.status).toBe(403);
    expect(JSON.parse(report.body).error.code).toBe('insufficient_scope');
    // The SDK's client with the report token cannot even initialize.
    await expect(connectMcp(dev.mcpUrl, REPORT_TOKEN)).rejects.toThrow(/insufficient_scope/);
  });

  it('answers GET and DELETE with 405: the endpoint is stateless, POST only', async () => {
    for (const method of ['GET', 'DELETE']) {
      const answer = await raw('/mcp', { host: host(), [DEV_TOKEN_HEADER]: TOKEN }, method);
      expect(answer.status, method).toBe(405);
    }
  });
});
