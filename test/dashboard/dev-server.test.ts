import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DashboardState, DevDelivery } from '../../src/dashboard/api-types.js';
import { type DevServer, startDevServer } from '../../src/dashboard/dev-server.js';
import type { ReceiverReport } from '../../src/dev/report.js';
import {
  devApi,
  openStream,
  type StreamReader,
  settled,
  startReceiver,
  type TestReceiver,
  writeStandInPage,
} from './support.js';

const SECRET = 'whsec_dashboard_test_secret';
const TOKEN = 'a-test-token-of-some-length';

/** A request with headers fetch will not let a test set (`Host`), as a rebinding page's would arrive. */
function raw(
  port: number,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const call = request({ host: '127.0.0.1', port, path, method, headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
      );
    });
    call.on('error', reject);
    call.end();
  });
}

let folder: string;
let receiver: TestReceiver;
let dev: DevServer;
let stream: StreamReader;

async function sample(type: string): Promise<Record<string, unknown> & { id: string }> {
  const state = await devApi<DashboardState>(dev.url, TOKEN, 'GET', '/state');
  return state.body.samples[type] as Record<string, unknown> & { id: string };
}

async function send(body: unknown): Promise<DevDelivery[]> {
  const answer = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  return answer.body.data;
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'dev-dashboard-'));
  receiver = await startReceiver(SECRET);
  dev = await startDevServer({
    forward: receiver.url,
    secret: SECRET,
    port: 0,
    timeScale: 0.001,
    assetsFolder: await writeStandInPage(folder),
    token: TOKEN,
  });
  stream = await openStream(dev.url, TOKEN);
});

afterAll(async () => {
  stream?.close();
  await dev?.close();
  await receiver?.close();
  await rm(folder, { recursive: true, force: true });
});

describe('service-webhooks dev: deliveries, live', () => {
  it('sends a sample: the 500, the scheduled retry and its 200 arrive on the stream as they happen', async () => {
    const event = await sample('user.created');
    receiver.failOnce.add(event.id);
    const [made] = await send({ event });
    expect(made).toMatchObject({ event_id: event.id, label: 'sent', status: 'pending', attempts: [] });

    const inFlight = await stream.next(
      (e) => e.type === 'delivery' && e.data.id === made!.id && e.data.in_flight,
    );
    expect(inFlight.type).toBe('delivery');
    const retrying = await stream.next(
      (e) =>
        e.type === 'delivery' && e.data.id === made!.id && e.data.attempts.length === 1 && !e.data.in_flight,
    );
    const first = retrying.type === 'delivery' ? retrying.data : undefined;
    expect(first?.attempts[0]).toMatchObject({ status: 500, code: 'handler_failed', duplicate: false });
    expect(first).toMatchObject({ status: 'pending', next_attempt: 2 });
    expect(first?.next_attempt_at).not.toBeNull();

    const done = await stream.next(settled(made!.id, 'succeeded'));
    const delivery = done.type === 'delivery' ? done.data : undefined;
    expect(delivery?.attempts.map((attempt) => attempt.status)).toEqual([500, 200]);
    // Every change is a new revision: created, sent, answered 500, sent again, answered 200.
    const revisions = stream.events.flatMap((e) =>
      e.type === 'delivery' && e.data.id === made!.id ? [e.data.revision] : [],
    );
    expect(revisions).toEqual([1, 2, 3, 4, 5]);
    expect(made!.revision).toBe(1);
    expect(delivery?.next_attempt_at).toBeNull();
    expect(receiver.runs.get(event.id)).toBe(2);
  });

  it('replays a delivery as it was: same id, answered as a duplicate, handlers not run again', async () => {
    const event = await sample('payment.succeeded');
    const [original] = await send({ event });
    await stream.next(settled(original!.id, 'succeeded'));
    const replay = await devApi<{ data: DevDelivery[] }>(
      dev.url,
      TOKEN,
      'POST',
      `/deliveries/${original!.id}/replay`,
    );
    expect(replay.status).toBe(202);
    const [made] = replay.body.data;
    expect(made).toMatchObject({ event_id: event.id, label: 'replay' });
    const done = await stream.next(settled(made!.id, 'succeeded'));
    expect(done.type === 'delivery' && done.data.attempts[0]).toMatchObject({ status: 200, duplicate: true });
    expect(receiver.runs.get(event.id)).toBe(1);
  });

  it('labels what is sent: a sample as is, an edited event, a delivered event sent unchanged', async () => {
    const event = await sample('project.updated');
    const [asIs] = await send({ event });
    expect(asIs?.label).toBe('sent');
    await stream.next(settled(asIs!.id, 'succeeded'));
    const [unchanged] = await send({ event });
    expect(unchanged?.label).toBe('replay');
    const edited = {
      ...event,
      id: `${event.id}_edited`,
      data: { ...(event.data as object), name: 'Edited' },
    };
    const [resent] = await send({ event: edited });
    expect(resent).toMatchObject({ label: 'edited', event_id: edited.id });
    const done = await stream.next(settled(resent!.id, 'succeeded'));
    expect(done.type === 'delivery' && done.data.event).toMatchObject({ data: { name: 'Edited' } });
    expect(receiver.runs.get(edited.id)).toBe(1);
  });

  it('sends the cases a receiver must refuse, once each: a forged signature, a stale created', async () => {
    const [forged] = await send({ type: 'user.deleted', case: 'forged_signature' });
    expect(forged).toMatchObject({ label: 'forged_signature', retried: false });
    const refused = await stream.next(settled(forged!.id, 'failed'));
    expect(refused.type === 'delivery' && refused.data.attempts).toEqual([
      expect.objectContaining({ status: 401, code: 'invalid_signature' }),
    ]);

    const [stale] = await send({ type: 'user.updated', case: 'stale_created' });
    expect(stale!.event.created).toBeLessThan(Date.now() / 1000 - 24 * 3600);
    const old = await stream.next(settled(stale!.id, 'failed'));
    expect(old.type === 'delivery' && old.data.attempts).toEqual([
      expect.objectContaining({ status: 400, code: 'event_too_old' }),
    ]);
  });

  it('sends two concurrent copies of one event: the handlers run once', async () => {
    const made = await send({ type: 'payment.refunded', case: 'concurrent_copies' });
    expect(made).toHaveLength(2);
    expect(made[0]!.event_id).toBe(made[1]!.event_id);
    const answers = [];
    for (const copy of made) {
      const done = await stream.next(settled(copy.id, 'succeeded'));
      if (done.type === 'delivery') answers.push(...done.data.attempts);
    }
    // One handled; the other a duplicate, or 409 event_in_progress and then a duplicate on its retry.
    expect(answers.filter((attempt) => attempt.status === 200 && !attempt.duplicate)).toHaveLength(1);
    expect(answers.some((attempt) => attempt.duplicate || attempt.code === 'event_in_progress')).toBe(true);
    expect(receiver.runs.get(made[0]!.event_id)).toBe(1);

    // An event the receiver already handled would only show two duplicates: the copies get a fresh id.
    const again = await send({ event: made[0]!.event, case: 'concurrent_copies' });
    expect(again[0]!.event_id).not.toBe(made[0]!.event_id);
    expect(again[1]!.event_id).toBe(again[0]!.event_id);
    for (const copy of again) await stream.next(settled(copy.id, 'succeeded'));
    expect(receiver.runs.get(again[0]!.event_id)).toBe(1);
  });

  it('joins what the receiver reports to the attempt it speaks of, and says a receiver reports', async () => {
    const event = await sample('user.updated');
    receiver.failAlways.add(event.id);
    const [made] = await send({ event, case: 'sent' });
    const failed = await stream.next(
      (e) =>
        e.type === 'delivery' && e.data.id === made!.id && e.data.attempts.length === 1 && !e.data.in_flight,
    );
    const attempt = failed.type === 'delivery' ? failed.data.attempts[0]! : undefined;
    receiver.failAlways.delete(event.id);
    const report: ReceiverReport = {
      eventId: event.id,
      eventType: 'user.updated',
      outcome: 'failed',
      status: 500,
      code: 'handler_failed',
      durationMs: 31.5,
      secretIndex: 0,
      error: {
        name: 'HandlerFailedError',
        code: 'handler_failed',
        message: 'A handler failed.',
        stack: 'HandlerFailedError: A handler failed.\n    at handler',
        cause: {
          name: 'Error',
          code: undefined,
          message: 'boom, always',
          stack: 'Error: boom',
          cause: undefined,
        },
      },
      late: false,
      level: 'error',
      message: 'webhook delivery failed',
      at: new Date(Date.parse(attempt!.started_at) + 20).toISOString(),
      pid: 1234,
    };
    const posted = await devApi(dev.url, TOKEN, 'POST', '/report', { records: [report] });
    expect(posted).toMatchObject({ status: 200, body: { accepted: 1 } });
    await stream.next((e) => e.type === 'report');
    const joined = await stream.next(
      (e) =>
        e.type === 'delivery' && e.data.id === made!.id && (e.data.attempts[0]?.receiver ?? null) !== null,
    );
    expect(joined.type === 'delivery' && joined.data.attempts[0]!.receiver).toMatchObject({
      outcome: 'failed',
      secretIndex: 0,
      error: { cause: { message: 'boom, always' } },
    });
    const state = await devApi<DashboardState>(dev.url, TOKEN, 'GET', '/state');
    expect(state.body.last_report_at).toBe(report.at);
    // The receiver's address carries a token of its own, which posts reports only (trust-boundary.test.ts).
    expect(state.body.report_url).toBe(dev.reportUrl);
    expect(dev.reportUrl).toMatch(new RegExp(`^${dev.url}_dev/api/report\\?token=[\\w-]{32}$`));
    expect(dev.reportUrl).not.toContain(TOKEN);
    await stream.next(settled(made!.id, 'succeeded'));
  });

  it('exports a delivery as a fixture and as a test that reproduces it', async () => {
    const event = await sample('payment.failed');
    receiver.failOnce.add(event.id);
    const [made] = await send({ event });
    await stream.next(settled(made!.id, 'succeeded'));
    const fixture = await devApi<string>(dev.url, TOKEN, 'GET', `/deliveries/${made!.id}/export?as=fixture`);
    expect(fixture.headers.get('content-disposition')).toBe(
      `attachment; filename="payment-failed-${event.id}.json"`,
    );
    const parsed = typeof fixture.body === 'string' ? JSON.parse(fixture.body) : fixture.body;
    expect(parsed.event).toEqual(event);
    expect(JSON.parse(parsed.body)).toMatchObject({ id: event.id, type: 'payment.failed' });
    expect(parsed.attempts.map((attempt: { answer: string }) => attempt.answer)).toEqual([
      '500 handler_failed',
      '200',
    ]);
    expect(JSON.stringify(parsed)).not.toContain(SECRET);

    const test = await devApi<string>(dev.url, TOKEN, 'GET', `/deliveries/${made!.id}/export?as=test`);
    expect(test.headers.get('content-disposition')).toBe(
      `attachment; filename="payment-failed-${event.id}.test.ts"`,
    );
    expect(test.body).toContain("import { deliver } from 'service-webhooks/testing';");
    expect(test.body).toContain(`"id": "${event.id}"`);
    expect(test.body).toContain(`//   attempt 1: "500 handler_failed`);
    expect(test.body).not.toContain(SECRET);
  });

  it('answers errors from one shape: unknown routes, bad bodies, missing deliveries', async () => {
    expect(await devApi(dev.url, TOKEN, 'GET', '/nope')).toMatchObject({
      status: 404,
      body: { error: { code: 'not_found' } },
    });
    expect(await devApi(dev.url, TOKEN, 'POST', '/send', { type: 'user.exploded' })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_type' } },
    });
    expect(await devApi(dev.url, TOKEN, 'POST', '/send', { event: { type: 'user.created' } })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_event' } },
    });
    expect(await devApi(dev.url, TOKEN, 'POST', '/deliveries/dlv_missing/replay')).toMatchObject({
      status: 404,
      body: { error: { code: 'delivery_not_found' } },
    });
    expect(await devApi(dev.url, TOKEN, 'GET', '/inbox')).toMatchObject({
      status: 404,
      body: { error: { code: 'no_inbox' } },
    });
  });

  it('shows the secret only when asked', async () => {
    const state = await devApi<DashboardState>(dev.url, TOKEN, 'GET', '/state');
    expect(JSON.stringify(state.body)).not.toContain(SECRET);
    expect(state.body.secret_hint).toBe(SECRET.slice(-4));
    expect((await devApi(dev.url, TOKEN, 'GET', '/secret')).body).toEqual({ secret: SECRET });
  });
});

describe('service-webhooks dev: a page on another origin can neither read it nor act', () => {
  const port = () => dev.port;
  const good = () => ({ host: `127.0.0.1:${port()}`, 'x-service-webhooks-dev-token': TOKEN });

  it('serves the page, with its token, only to its own Host, under a strict content-security policy', async () => {
    const page = await raw(port(), '/', { host: `localhost:${port()}` });
    expect(page.status).toBe(200);
    expect(page.body).toContain(`content="${TOKEN}"`);
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['cache-control']).toBe('no-store');
    // DNS rebinding: evil.example resolves to 127.0.0.1, so the browser calls it same-origin, but Host says so.
    const rebound = await raw(port(), '/', { host: `evil.example:${port()}` });
    expect(rebound.status).toBe(403);
    expect(rebound.body).not.toContain(TOKEN);
    expect(JSON.parse(rebound.body)).toMatchObject({ error: { code: 'host_not_allowed' } });
  });

  it('refuses API requests from another Host, another Origin, cross-site, or without the token', async () => {
    const cases: [Record<string, string>, number, string][] = [
      [{ ...good(), host: `evil.example:${port()}` }, 403, 'host_not_allowed'],
      [{ ...good(), host: `127.0.0.1:${port() + 1}` }, 403, 'host_not_allowed'],
      [{ ...good(), origin: 'http://evil.example' }, 403, 'origin_not_allowed'],
      [{ ...good(), origin: `http://localhost:${port() + 1}` }, 403, 'origin_not_allowed'],
      [{ ...good(), origin: 'null' }, 403, 'origin_not_allowed'],
      [{ ...good(), 'sec-fetch-site': 'cross-site' }, 403, 'cross_site_request'],
      [{ host: `127.0.0.1:${port()}` }, 401, 'invalid_token'],
      [{ ...good(), 'x-service-webhooks-dev-token': `${TOKEN}x` }, 401, 'invalid_token'],
    ];
    for (const [headers, status, code] of cases) {
      const answer = await raw(
        port(),
        '/_dev/api/send',
        { ...headers, 'content-type': 'application/json' },
        'POST',
      );
      expect({ headers, status: answer.status }).toEqual({ headers, status });
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code } });
    }
    const before = receiver.runs.size;
    expect(receiver.runs.size).toBe(before);
    const own = await raw(port(), '/_dev/api/state', { ...good(), origin: `http://127.0.0.1:${port()}` });
    expect(own.status).toBe(200);
  });

  it('leaves the sandbox API to its own credentials: the key of this start', async () => {
    const answer = await fetch(`${dev.apiUrl}/webhooks`, {
      headers: { authorization: `Bearer ${dev.apiKey}` },
    });
    expect(answer.status).toBe(200);
    const other = await fetch(`${dev.apiUrl}/webhooks`, {
      headers: { authorization: 'Bearer sk_test_other' },
    });
    expect(other.status).toBe(401);
  });
});

describe('service-webhooks dev: history', () => {
  it('survives a restart, bounded to the history limit', async () => {
    const dataFile = join(folder, 'history.json');
    const options = {
      forward: receiver.url,
      secret: SECRET,
      port: 0,
      timeScale: 0.001,
      assetsFolder: folder,
      token: TOKEN,
      dataFile,
      historyLimit: 3,
    };
    const first = await startDevServer(options);
    const sent: string[] = [];
    const firstStream = await openStream(first.url, TOKEN);
    for (let index = 0; index < 5; index++) {
      const answer = await devApi<{ data: DevDelivery[] }>(first.url, TOKEN, 'POST', '/send', {
        type: 'user.created',
      });
      const id = answer.body.data[0]!.id;
      sent.push(id);
      await firstStream.next(settled(id, 'succeeded'));
    }
    firstStream.close();
    await first.close();

    const second = await startDevServer(options);
    try {
      const listed = await devApi<{ data: DevDelivery[] }>(second.url, TOKEN, 'GET', '/deliveries');
      expect(listed.body.data.map((delivery) => delivery.id)).toEqual(sent.slice(2).reverse());
      expect(listed.body.data[0]!.attempts[0]).toMatchObject({ status: 200 });
      expect(second.secret).toBe(SECRET);
      const cleared = await devApi(second.url, TOKEN, 'DELETE', '/deliveries');
      expect(cleared.body).toEqual({ deleted: 3 });
      expect((await devApi<{ data: unknown[] }>(second.url, TOKEN, 'GET', '/deliveries')).body.data).toEqual(
        [],
      );
    } finally {
      await second.close();
    }
  });
});
