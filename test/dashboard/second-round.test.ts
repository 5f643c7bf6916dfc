/**
 * What issue 50 found missing in `service-webhooks dev`, on the server's side (the browser test clicks
 * through the same): retry now, `service-webhooks send`'s attempts, an inbox worker's runs, reports that
 * match nothing, and the event stream resumed from its last id. A real dev server and a real receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DashboardState, DevDelivery, SentRecord } from '../../src/dashboard/api-types.js';
import type { DevServer } from '../../src/dashboard/dev-server.js';
import type { ReceiverReport } from '../../src/dev/report.js';
import { DEV_TOKEN_HEADER } from '../../src/dev/report.js';
import {
  devApi,
  openStream,
  settled,
  startReceiver,
  startTestDevServer,
  type TestReceiver,
} from './support.js';

const SECRET = 'whsec_second_round_secret';
const TOKEN = 'second-round-token';

let receiver: TestReceiver;
let dev: DevServer;
const logged: string[] = [];
const reportToken = () => new URL(dev.reportUrl).searchParams.get('token')!;

function report(fields: Partial<ReceiverReport>): ReceiverReport {
  return {
    eventId: undefined,
    eventType: 'user.created',
    outcome: 'handled',
    status: 200,
    code: undefined,
    durationMs: 1,
    secretIndex: 0,
    error: undefined,
    late: false,
    level: 'info',
    message: 'webhook delivery',
    at: new Date().toISOString(),
    pid: 1,
    ...fields,
  };
}

beforeAll(async () => {
  receiver = await startReceiver(SECRET);
  dev = await startTestDevServer('dev-second-round', {
    forward: receiver.url,
    secret: SECRET,
    // Retries a minute × 0.05 = 3 s away: long enough that an attempt before then was "retry now"'s.
    timeScale: 0.05,
    token: TOKEN,
    log: (line) => logged.push(line),
  });
});

afterAll(async () => {
  await dev?.close();
  await receiver?.close();
});

describe('service-webhooks dev, second round', () => {
  it('records the headers of each attempt as signed and sent, and the answer’s', async () => {
    const stream = await openStream(dev.url, TOKEN);
    try {
      const sent = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', {
        type: 'user.created',
      });
      const done = await stream.next(settled(sent.body.data[0]!.id, 'succeeded'));
      const attempt = (done.data as DevDelivery).attempts[0]!;
      expect(attempt.request_headers).toMatchObject({
        'content-type': 'application/json',
        'user-agent': 'service-webhooks-sandbox',
      });
      expect(attempt.request_headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(attempt.response_headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.stringify(attempt)).not.toContain(SECRET);
    } finally {
      stream.close();
    }
  });

  it('sends a scheduled retry now; with no retry waiting it answers 409 no_retry_scheduled', async () => {
    const stream = await openStream(dev.url, TOKEN);
    try {
      const state = await devApi<DashboardState>(dev.url, TOKEN, 'GET', '/state');
      const event = state.body.samples['payment.failed'] as { id: string };
      receiver.failAlways.add(event.id);
      const sent = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', { event });
      const id = sent.body.data[0]!.id;
      const failed = (await stream.next(
        (each) =>
          each.type === 'delivery' &&
          each.data.id === id &&
          each.data.attempts.length === 1 &&
          !each.data.in_flight,
      )) as { data: DevDelivery };
      const due = Date.parse(failed.data.next_attempt_at!);
      const retried = await devApi<{ data: DevDelivery[] }>(
        dev.url,
        TOKEN,
        'POST',
        `/deliveries/${id}/retry`,
      );
      expect(retried.status).toBe(202);
      const second = (await stream.next(
        (each) => each.type === 'delivery' && each.data.id === id && each.data.attempts.length === 2,
      )) as { data: DevDelivery };
      expect(Date.parse(second.data.attempts[1]!.started_at)).toBeLessThan(due);
      // Fixed: the next retry, now too, succeeds.
      await stream.next(
        (each) =>
          each.type === 'delivery' &&
          each.data.id === id &&
          each.data.attempts.length === 2 &&
          !each.data.in_flight,
      );
      receiver.failAlways.delete(event.id);
      expect((await devApi(dev.url, TOKEN, 'POST', `/deliveries/${id}/retry`)).status).toBe(202);
      const done = await stream.next(settled(id, 'succeeded'));
      expect((done.data as DevDelivery).attempts).toHaveLength(3);
      const again = await devApi(dev.url, TOKEN, 'POST', `/deliveries/${id}/retry`);
      expect(again).toMatchObject({ status: 409, body: { error: { code: 'no_retry_scheduled' } } });
      const missing = await devApi(dev.url, TOKEN, 'POST', '/deliveries/dlv_none/retry');
      expect(missing).toMatchObject({ status: 404, body: { error: { code: 'delivery_not_found' } } });
    } finally {
      stream.close();
    }
  }, 30_000);

  it("lists an attempt `service-webhooks send` made (report token), joining the receiver's report that came first", async () => {
    const eventId = `evt_sent_${Date.now()}`;
    const startedAt = new Date();
    // The receiver reported before the sender told the dashboard: the report waits for its attempt.
    const posted = await devApi(dev.url, reportToken(), 'POST', '/report', {
      records: [report({ eventId, at: new Date(startedAt.getTime() + 5).toISOString() })],
    });
    expect(posted.status).toBe(200);
    const record: SentRecord = {
      event: { id: eventId, type: 'user.created', object: 'event', created: 1, data: {} },
      url: receiver.url,
      started_at: startedAt.toISOString(),
      duration_ms: 12,
      status: 200,
      error: null,
      response_body: '{"received":true}',
      code: null,
      duplicate: false,
      retry_after: null,
      request_headers: { 'x-service-signature': 'sha256=00' },
      response_headers: { 'content-type': 'application/json' },
    };
    const answer = await devApi<{ data: DevDelivery[] }>(dev.url, reportToken(), 'POST', '/sent', record);
    expect(answer.status).toBe(201);
    const delivery = answer.body.data[0]!;
    expect(delivery).toMatchObject({ label: 'cli', status: 'succeeded', event_id: eventId, retried: false });
    expect(delivery.attempts[0]!.receiver).toMatchObject({ eventId, outcome: 'handled' });
    const bad = await devApi(dev.url, reportToken(), 'POST', '/sent', { event: {} });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_sent_record' } } });
  });

  it("puts an inbox worker's runs under their delivery, even when the door's report comes after", async () => {
    // A door that queued: the sandbox's attempt got 200; the worker's failed run reports first.
    const eventId = `evt_door_${Date.now()}`;
    const now = new Date();
    const record: SentRecord = {
      event: { id: eventId, type: 'project.created', object: 'event', created: 1, data: {} },
      url: receiver.url,
      started_at: now.toISOString(),
      duration_ms: 3,
      status: 200,
      error: null,
      response_body: '{"received":true}',
      code: null,
      duplicate: false,
      retry_after: null,
      request_headers: {},
      response_headers: {},
    };
    const workerFailed = report({
      eventId,
      outcome: 'failed',
      status: 500,
      code: 'handler_failed',
      inboxRun: { attempt: 1, replayId: undefined },
      error: {
        name: 'HandlerFailedError',
        code: 'handler_failed',
        message: 'A handler threw',
        stack: undefined,
        cause: { name: 'Error', code: undefined, message: 'crm down', stack: undefined, cause: undefined },
      },
      handlers: [{ index: 0, name: 'syncCrm', outcome: 'failed', durationMs: 2 }],
    });
    await devApi(dev.url, reportToken(), 'POST', '/report', { records: [workerFailed] });
    await devApi(dev.url, reportToken(), 'POST', '/sent', record);
    const door = report({ eventId, outcome: 'queued', at: new Date(now.getTime() + 1).toISOString() });
    const workerHandled = report({ eventId, inboxRun: { attempt: 2, replayId: undefined } });
    await devApi(dev.url, reportToken(), 'POST', '/report', { records: [door, workerHandled] });
    const list = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'GET', '/deliveries');
    const delivery = list.body.data.find((each) => each.event_id === eventId)!;
    expect(delivery.attempts[0]!.receiver?.outcome).toBe('queued');
    expect(delivery.worker_runs.map((run) => [run.inboxRun?.attempt, run.outcome])).toEqual([
      [1, 'failed'],
      [2, 'handled'],
    ]);
    expect(delivery.worker_runs[0]!.handlers).toEqual([
      { index: 0, name: 'syncCrm', outcome: 'failed', durationMs: 2 },
    ]);
  });

  it('counts and logs a report that matches nothing once its wait is over, and tells the pages', async () => {
    const stream = await openStream(dev.url, TOKEN);
    try {
      const before = (await devApi<DashboardState>(dev.url, TOKEN, 'GET', '/state')).body.unmatched_reports;
      await devApi(dev.url, reportToken(), 'POST', '/report', {
        records: [report({ eventId: 'evt_from_elsewhere' })],
      });
      // The wait is ten seconds: a report of an attempt not yet recorded is not given up sooner.
      const told = await stream.next((each) => each.type === 'unmatched', 20_000);
      expect(told.data).toMatchObject({ count: before + 1 });
      expect(
        logged.some(
          (line) => line.startsWith('report unmatched report:') && line.includes('evt_from_elsewhere'),
        ),
      ).toBe(true);
      const after = (await devApi<DashboardState>(dev.url, TOKEN, 'GET', '/state')).body.unmatched_reports;
      expect(after).toBe(before + 1);
    } finally {
      stream.close();
    }
  }, 30_000);

  it('resumes the event stream from Last-Event-ID: what was missed, then sync resumed; an unknown id is not resumed', async () => {
    const read = async (headers: Record<string, string>, until: (text: string) => boolean) => {
      const controller = new AbortController();
      const response = await fetch(new URL(`_dev/api/events?token=${TOKEN}`, dev.url), {
        headers,
        signal: controller.signal,
      });
      const decoder = new TextDecoder();
      let text = '';
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
        if (until(text)) break;
      }
      controller.abort();
      return text;
    };
    // At least one event sent, so the stream has an id to resume from.
    const earlier = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', {
      type: 'user.updated',
    });
    await expect
      .poll(async () => {
        const list = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'GET', '/deliveries');
        return list.body.data.find((each) => each.id === earlier.body.data[0]!.id)?.status;
      })
      .toBe('succeeded');
    const first = await read({}, (text) => text.includes('event: sync'));
    expect(first).toContain('"resumed":false');
    const lastId = /^id: (\S+)$/m.exec(first)?.[1];
    // Something happens while no page listens.
    const sent = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', {
      type: 'user.deleted',
    });
    const id = sent.body.data[0]!.id;
    const resumed = await read({ 'last-event-id': lastId! }, (text) => text.includes('event: sync'));
    expect(resumed).toContain(`"id":"${id}"`);
    expect(resumed).toMatch(/event: sync\ndata: \{"resumed":true,"missed":[1-9]\d*\}/);
    const stranger = await read({ 'last-event-id': 'another-start.5' }, (text) =>
      text.includes('event: sync'),
    );
    // Before its sync, nothing is replayed to a page of another start (what follows is live).
    expect(stranger).toContain('"resumed":false');
    expect(stranger.slice(0, stranger.indexOf('event: sync'))).not.toContain(`"id":"${id}"`);
    // A report token never opens the stream, resumed or not.
    const refused = await fetch(new URL(`_dev/api/events?token=${reportToken()}`, dev.url), {
      headers: { [DEV_TOKEN_HEADER]: reportToken(), 'last-event-id': lastId! },
    });
    expect(refused.status).toBe(403);
    await refused.body?.cancel();
  });
});
