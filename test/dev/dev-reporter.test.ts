/**
 * devReporter against a real receiver (createWebhooks + deliver) and a real HTTP server standing in for
 * the dashboard of `service-webhooks dev`: what arrives there, with which token, in how many posts, and
 * what happens when the dashboard is down, refuses the token, or the address is not for this machine.
 */
import { execFile } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  ConfigurationError,
  createWebhooks,
  type DeliveryRecord,
  type WebhookLogger,
} from 'service-webhooks';
import {
  DEV_TOKEN_HEADER,
  DEV_URL_ENV,
  devReporter,
  type ReceiverReport,
  type ReportBatch,
} from 'service-webhooks/dev';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { MAX_BATCH_BYTES } from '../../src/dev/report.js';
import { MAX_REQUEST_BYTES } from '../../src/sandbox/http-io.js';

const SECRETS = ['whsec_dev_reporter_new', 'whsec_dev_reporter_old'];
const TOKEN = 'abc123';
const WAIT = { timeout: 5_000, interval: 10 };

interface Post {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly batch: ReportBatch;
}

interface Dashboard {
  readonly posts: Post[];
  /** The report address as the dashboard shows it, token in the query. */
  readonly reportUrl: string;
  records(): ReceiverReport[];
  close(): Promise<void>;
}

type Answer = (post: Post) => Promise<{ status: number; body: unknown }> | { status: number; body: unknown };

/** The dashboard's report endpoint: records what it receives, answers 200 {accepted} (or `answer`). */
async function startDashboard(answer?: Answer): Promise<Dashboard> {
  const posts: Post[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const post: Post = {
        url: req.url ?? '',
        headers: req.headers,
        batch: JSON.parse(Buffer.concat(chunks).toString('utf8')) as ReportBatch,
      };
      posts.push(post);
      const { status, body } = answer
        ? await answer(post)
        : { status: 200, body: { accepted: post.batch.records.length } };
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    posts,
    reportUrl: `http://127.0.0.1:${port}/_dev/api/report?token=${TOKEN}`,
    records: () => posts.flatMap((post) => post.batch.records),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An address on 127.0.0.1 where nothing listens (a port just released). */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/_dev/api/report?token=${TOKEN}`;
}

/** A logger that keeps what it is given, as the developer's own (pino…) would print it. */
function recordingLogger() {
  const calls: { level: 'info' | 'warn' | 'error'; record: DeliveryRecord; message: string | undefined }[] =
    [];
  const logger: WebhookLogger = {
    info: (record, message) => calls.push({ level: 'info', record, message }),
    warn: (record, message) => calls.push({ level: 'warn', record, message }),
    error: (record, message) => calls.push({ level: 'error', record, message }),
  };
  return { logger, calls };
}

function record(overrides: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    eventId: `evt_${Math.random().toString(36).slice(2)}`,
    eventType: 'payment.succeeded',
    outcome: 'handled',
    status: 200,
    code: undefined,
    durationMs: 1.5,
    secretIndex: 0,
    ...overrides,
  };
}

let dashboard: Dashboard | undefined;
let warn: ReturnType<typeof vi.spyOn>;

beforeEach(() => {
  warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
  vi.stubEnv(DEV_URL_ENV, '');
  vi.stubEnv('NODE_ENV', 'test');
});

afterEach(async () => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
  await dashboard?.close();
  dashboard = undefined;
});

describe('devReporter with a dashboard', () => {
  test("reports what the receiver decided: outcome, status, code, secret, the error and the handler's error as its cause", async () => {
    dashboard = await startDashboard();
    const inner = recordingLogger();
    const reporter = devReporter({ url: dashboard.reportUrl, logger: inner.logger });
    const webhooks = createWebhooks({ secret: SECRETS, logger: reporter });
    const dbDown = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    webhooks.on('payment.succeeded', () => {});
    webhooks.on('payment.failed', () => {
      throw new Error('could not mark the invoice unpaid', { cause: dbDown });
    });

    const paid = createTestEvent('payment.succeeded');
    const failing = createTestEvent('payment.failed');
    const answers = [
      await deliver(webhooks, paid, { secret: SECRETS[1]! }),
      await deliver(webhooks, failing, { secret: SECRETS[0]! }),
      await deliver(webhooks, paid, { secret: SECRETS[0]! }),
      await deliver(webhooks, createTestEvent('user.created'), { secret: 'whsec_someone_else' }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 500, 200, 401]);

    await vi.waitFor(() => expect(dashboard!.records()).toHaveLength(4), WAIT);
    const [handled, failed, duplicate, forged] = dashboard.records();

    expect(handled).toMatchObject({
      eventId: paid.id,
      eventType: 'payment.succeeded',
      outcome: 'handled',
      status: 200,
      secretIndex: 1,
      late: false,
      level: 'info',
      message: 'webhook delivery',
      pid: process.pid,
    });
    // JSON leaves out what is undefined: the dashboard reads an absent key as undefined.
    expect(handled!.code).toBeUndefined();
    expect(handled!.error).toBeUndefined();
    expect(handled!.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(handled!.at)).toBeGreaterThan(Date.now() - 60_000);

    expect(failed).toMatchObject({
      eventId: failing.id,
      outcome: 'failed',
      status: 500,
      code: 'handler_failed',
      secretIndex: 0,
      level: 'error',
      message: 'webhook delivery failed',
    });
    expect(failed!.error).toMatchObject({
      name: 'HandlerFailedError',
      code: 'handler_failed',
      message: 'A handler threw while handling the event.',
      cause: {
        name: 'Error',
        message: 'could not mark the invoice unpaid',
        cause: { name: 'Error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
      },
    });
    expect(failed!.error!.stack).toContain('HandlerFailedError');
    expect(failed!.error!.cause!.code).toBeUndefined();
    expect(failed!.error!.cause!.stack).toContain('could not mark the invoice unpaid');
    expect(failed!.error!.cause!.stack).toContain('dev-reporter.test.ts');

    expect(duplicate).toMatchObject({ eventId: paid.id, outcome: 'duplicate', status: 200, level: 'info' });
    expect(forged).toMatchObject({
      outcome: 'rejected',
      status: 401,
      code: 'invalid_signature',
      level: 'warn',
    });
    expect(forged!.eventId).toBeUndefined();
    expect(forged!.secretIndex).toBeUndefined();

    // The developer's logger saw every record, unchanged, and the reports say the same things.
    expect(inner.calls).toHaveLength(4);
    expect(inner.calls[1]!.record.err?.cause).toBeInstanceOf(Error);
    for (const [i, call] of inner.calls.entries()) {
      const report = dashboard.records()[i]!;
      for (const key of [
        'eventId',
        'eventType',
        'outcome',
        'status',
        'code',
        'secretIndex',
        'durationMs',
      ] as const)
        expect(report[key], key).toBe(call.record[key]);
      expect(report.level).toBe(call.level);
      expect(report.message).toBe(call.message);
    }
    // Nothing of the event beyond its id and type: no body, no data, no secret.
    const wire = JSON.stringify(dashboard.posts.map((post) => post.batch));
    for (const secret of SECRETS) expect(wire).not.toContain(secret);
    expect(wire).not.toContain(failing.data.id);
  });

  test('moves the token from the query to the header: the posted URL has no token', async () => {
    dashboard = await startDashboard();
    const reporter = devReporter({ url: `${dashboard.reportUrl}&keep=1` });
    reporter.info(record(), 'webhook delivery');
    await vi.waitFor(() => expect(dashboard!.posts).toHaveLength(1), WAIT);
    const [post] = dashboard.posts;
    expect(post!.headers[DEV_TOKEN_HEADER]).toBe(TOKEN);
    expect(post!.headers['content-type']).toBe('application/json');
    expect(post!.url).toBe('/_dev/api/report?keep=1');
    expect(post!.url).not.toContain(TOKEN);
  });

  test('deliveries answered together arrive in one post, soon after (a timer, not a flush)', async () => {
    dashboard = await startDashboard();
    const webhooks = createWebhooks({
      secret: SECRETS[0]!,
      logger: devReporter({ url: dashboard.reportUrl }),
    });
    webhooks.on('user.created', () => {});
    const answers = await Promise.all(
      [1, 2, 3].map(() => deliver(webhooks, createTestEvent('user.created'), { secret: SECRETS[0]! })),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    await vi.waitFor(() => expect(dashboard!.records()).toHaveLength(3), WAIT);
    expect(dashboard.posts.length).toBeLessThan(3);
    expect(Math.max(...dashboard.posts.map((post) => post.batch.records.length))).toBeGreaterThan(1);
  });

  test('passes each record to the inner logger first, synchronously, and returns what it returns', async () => {
    dashboard = await startDashboard();
    const promise = Promise.resolve('written');
    const order: string[] = [];
    const inner: WebhookLogger = {
      info: () => {
        order.push('inner');
        return promise;
      },
      warn: () => undefined,
      error: () => undefined,
    };
    const reporter = devReporter({ url: dashboard.reportUrl, logger: inner });
    const given = record();
    expect(reporter.info(given, 'webhook delivery')).toBe(promise);
    expect(order).toEqual(['inner']);
    expect(dashboard.posts).toHaveLength(0);
    await reporter.flush!();
    expect(dashboard.records()).toHaveLength(1);
  });

  test('an inner logger that throws still lets the record be reported, and its error reaches the receiver', async () => {
    dashboard = await startDashboard();
    const failure = new Error('pino destination closed');
    const inner: WebhookLogger = {
      info: () => {
        throw failure;
      },
      warn: () => undefined,
      error: () => undefined,
    };
    const reporter = devReporter({ url: dashboard.reportUrl, logger: inner });
    expect(() => reporter.info(record(), 'webhook delivery')).toThrow(failure);
    await reporter.flush!();
    expect(dashboard.records()).toHaveLength(1);
  });

  test('flush() resolves once everything logged so far was posted, without waiting for the timer', async () => {
    dashboard = await startDashboard();
    const reporter = devReporter({ url: dashboard.reportUrl, flushIntervalMs: 60_000 });
    const ids = ['evt_a', 'evt_b', 'evt_c'];
    for (const eventId of ids) reporter.info(record({ eventId }), 'webhook delivery');
    await reporter.flush!();
    expect(dashboard.posts).toHaveLength(1);
    expect(dashboard.records().map((report) => report.eventId)).toEqual(ids);
    await reporter.flush!(); // Nothing queued: resolves at once, posts nothing.
    expect(dashboard.posts).toHaveLength(1);
  });

  test('one post in flight at a time: records logged meanwhile wait, then go in the next post', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    dashboard = await startDashboard(async (post) => {
      if (post.batch.records[0]?.eventId === 'evt_first') await held;
      return { status: 200, body: { accepted: post.batch.records.length } };
    });
    const reporter = devReporter({ url: dashboard.reportUrl, flushIntervalMs: 5 });
    reporter.info(record({ eventId: 'evt_first' }), 'webhook delivery');
    await vi.waitFor(() => expect(dashboard!.posts).toHaveLength(1), WAIT);
    reporter.info(record({ eventId: 'evt_second' }), 'webhook delivery');
    reporter.warn(record({ eventId: 'evt_third', outcome: 'rejected', status: 400 }), 'rejected');
    await new Promise((resolve) => setTimeout(resolve, 100)); // 20 flush intervals
    expect(dashboard.posts).toHaveLength(1);
    release();
    await reporter.flush!();
    expect(dashboard.posts.map((post) => post.batch.records.map((report) => report.eventId))).toEqual([
      ['evt_first'],
      ['evt_second', 'evt_third'],
    ]);
  });

  test('beyond maxQueued the oldest records are dropped, and the drop is said once', async () => {
    dashboard = await startDashboard();
    const reporter = devReporter({ url: dashboard.reportUrl, flushIntervalMs: 60_000, maxQueued: 2 });
    for (const eventId of ['evt_1', 'evt_2', 'evt_3', 'evt_4', 'evt_5'])
      reporter.info(record({ eventId }), 'webhook delivery');
    await reporter.flush!();
    expect(dashboard.records().map((report) => report.eventId)).toEqual(['evt_4', 'evt_5']);
    expect(warn).toHaveBeenCalledOnce();
    expect(String(warn.mock.calls[0]![0])).toMatch(/3 record\(s\) were dropped: more than maxQueued \(2\)/);
  });

  test('reads SERVICE_WEBHOOKS_DEV_URL once, when created', async () => {
    dashboard = await startDashboard();
    vi.stubEnv(DEV_URL_ENV, dashboard.reportUrl);
    const reporter = devReporter();
    vi.stubEnv(DEV_URL_ENV, '');
    reporter.info(record(), 'webhook delivery');
    await reporter.flush!();
    expect(dashboard.records()).toHaveLength(1);
    expect(dashboard.posts[0]!.headers[DEV_TOKEN_HEADER]).toBe(TOKEN);
  });

  test('flattens the cause chain three deep, and causes that are not errors', async () => {
    dashboard = await startDashboard();
    const reporter = devReporter({ url: dashboard.reportUrl });
    let err: Error = Object.assign(new Error('level 5'), { cause: 'a string' });
    for (let level = 4; level >= 1; level--) err = new Error(`level ${level}`, { cause: err });
    reporter.error(record({ outcome: 'failed', status: 500, err: err as never }), 'failed');
    reporter.error(
      record({ outcome: 'failed', status: 500, err: new Error('top', { cause: 'not an error' }) as never }),
      'failed',
    );
    await reporter.flush!();
    const [deep, plain] = dashboard.records();
    expect(deep!.error!.message).toBe('level 1');
    expect(deep!.error!.cause!.cause!.cause!.message).toBe('level 4');
    expect(deep!.error!.cause!.cause!.cause!.cause).toBeUndefined();
    expect(plain!.error!.cause).toEqual({ name: 'string', message: 'not an error' });
  });
});

describe('devReporter when the dashboard cannot be reached', () => {
  test('dashboard down: the receiver answers as before, nothing throws or rejects, one warning without the token', async () => {
    const url = await closedPortUrl();
    const inner = recordingLogger();
    const reporter = devReporter({ url, logger: inner.logger });
    const plain = createWebhooks({ secret: SECRETS[0]! });
    const reported = createWebhooks({ secret: SECRETS[0]!, logger: reporter });
    for (const webhooks of [plain, reported]) {
      webhooks.onError(() => {}); // Keeps the plain receiver from printing the failure on stderr.
      webhooks.on('payment.failed', () => {
        throw new Error('boom');
      });
    }
    const event = createTestEvent('payment.failed');
    const expected = await deliver(plain, event, { secret: SECRETS[0]! });
    const answer = await deliver(reported, event, { secret: SECRETS[0]! });
    expect(answer).toEqual(expected);
    await expect(reporter.flush!()).resolves.toBeUndefined();
    reporter.info(record(), 'webhook delivery');
    await expect(reporter.flush!()).resolves.toBeUndefined();

    expect(inner.calls).toHaveLength(2);
    expect(warn).toHaveBeenCalledOnce();
    const message = String(warn.mock.calls[0]![0]);
    expect(message).toMatch(
      /^\[service-webhooks\] devReporter: could not reach the dashboard at http:\/\/127\.0\.0\.1:\d+\/_dev\/api\/report: .*ECONNREFUSED.*; further failures are not shown$/,
    );
    expect(message).not.toContain(TOKEN);
  });

  test('a refused token (401) is said once, with the dashboard’s code; later batches still go', async () => {
    let refuse = true;
    dashboard = await startDashboard(() =>
      refuse
        ? { status: 401, body: { error: { code: 'bad_token', message: 'The token does not match.' } } }
        : { status: 200, body: { accepted: 1 } },
    );
    const reporter = devReporter({ url: dashboard.reportUrl });
    reporter.info(record(), 'webhook delivery');
    await reporter.flush!();
    reporter.info(record(), 'webhook delivery');
    await reporter.flush!();
    expect(warn).toHaveBeenCalledOnce();
    expect(String(warn.mock.calls[0]![0])).toContain('HTTP 401 bad_token: The token does not match.');
    refuse = false;
    reporter.info(record({ eventId: 'evt_after' }), 'webhook delivery');
    await reporter.flush!();
    expect(dashboard.posts).toHaveLength(3);
    expect(dashboard.posts[2]!.batch.records[0]!.eventId).toBe('evt_after');
  });

  test('the unref’d timer never keeps the process alive', async () => {
    const script = fileURLToPath(new URL('./fixtures/reporter-exits.ts', import.meta.url));
    const started = performance.now();
    const { stdout } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', script],
        {
          env: {
            ...process.env,
            DEV_URL: 'http://127.0.0.1:9/_dev/api/report?token=t',
            FLUSH_INTERVAL_MS: '60000',
          },
          timeout: 15_000,
        },
        (error, stdout, stderr) =>
          error
            ? reject(new Error(`${error.message}\nstdout:\n${stdout}\nstderr:\n${stderr}`))
            : resolve({ stdout, stderr }),
      );
    });
    expect(stdout).toContain('logged');
    // A ref'd timer would hold it for the whole minute; tsx's start-up takes a second or two.
    expect(performance.now() - started).toBeLessThan(15_000);
  });
});

describe('devReporter without a dashboard to report to', () => {
  test('no URL: returns the inner logger itself, or a no-op; schedules nothing and sends nothing', () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const timerSpy = vi.spyOn(globalThis, 'setTimeout');
    const inner = recordingLogger();
    expect(devReporter({ logger: inner.logger })).toBe(inner.logger);
    const noop = devReporter();
    expect(noop.info(record(), 'webhook delivery')).toBeUndefined();
    noop.warn(record(), 'rejected');
    noop.error(record(), 'failed');
    expect(devReporter()).toBe(noop);
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(timerSpy).not.toHaveBeenCalled();
    expect(warn).not.toHaveBeenCalled();
  });

  test('the no-op has a flush that resolves at once', async () => {
    await expect(devReporter().flush!()).resolves.toBeUndefined();
  });

  test.each([
    'http://192.0.2.10:4010/_dev/api/report?token=abc123',
    'http://example.com/_dev/api/report?token=abc123',
    'http://128.0.0.1:4010/_dev/api/report?token=abc123',
    'http://localhost.example.com:4010/_dev/api/report?token=abc123',
    'http://[::2]:4010/_dev/api/report?token=abc123',
  ])('a host that is not loopback (%s): no request, one warning without the token', (url) => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const inner = recordingLogger();
    const reporter = devReporter({ url, logger: inner.logger });
    expect(reporter).toBe(inner.logger);
    reporter.error(record(), 'failed');
    expect(inner.calls).toHaveLength(1);
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(warn).toHaveBeenCalledOnce();
    const message = String(warn.mock.calls[0]![0]);
    expect(message).toContain('only a loopback host');
    expect(message).not.toContain(TOKEN);
  });

  test.each([
    'http://127.0.0.1:4010/r',
    'http://127.1.2.3:4010/r',
    'http://localhost:4010/r',
    'http://dash.localhost:4010/r',
    'http://[::1]:4010/r',
    'http://[::ffff:127.0.0.1]:4010/r',
    'http://0x7f.0.0.1:4010/r',
  ])('loopback hosts are reported to (%s)', (url) => {
    const inner = recordingLogger();
    expect(devReporter({ url, logger: inner.logger })).not.toBe(inner.logger);
    expect(warn).not.toHaveBeenCalled();
  });

  test('NODE_ENV=production with a URL set: the inner logger, one warning, no request', () => {
    vi.stubEnv('NODE_ENV', 'production');
    vi.stubEnv(DEV_URL_ENV, 'http://127.0.0.1:4010/_dev/api/report?token=abc123');
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const inner = recordingLogger();
    const reporter = devReporter({ logger: inner.logger });
    expect(reporter).toBe(inner.logger);
    reporter.info(record(), 'webhook delivery');
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(warn).toHaveBeenCalledOnce();
    expect(String(warn.mock.calls[0]![0])).toContain('NODE_ENV is production');
    expect(String(warn.mock.calls[0]![0])).not.toContain(TOKEN);
  });
});

/** What fixtures/failing-receiver.ts printed, run with LOGGER (and SERVICE_WEBHOOKS_DEV_URL when given). */
async function runFailingReceiver(
  logger: 'none' | 'reporter',
  devUrl = '',
): Promise<{ stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL('./fixtures/failing-receiver.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script],
      {
        env: { ...process.env, LOGGER: logger, [DEV_URL_ENV]: devUrl, NODE_ENV: 'development' },
        timeout: 30_000,
      },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`${error.message}\nstdout:\n${stdout}\nstderr:\n${stderr}`))
          : resolve({ stdout, stderr }),
    );
  });
}

/** stderr without the reporter's own lines (a dashboard it could not reach). */
/**
 * Stderr without the reporter's own lines, and without the stack frames of the handlers' runner: a
 * logger that asks for handler steps (devReporter does, when it has a dashboard to tell) runs them
 * through the observed runner, so those frames name another function of src/run-handlers.ts.
 */
function withoutReporterLines(stderr: string): string {
  return stderr
    .split('\n')
    .filter((line) => !line.startsWith('[service-webhooks] devReporter:'))
    .filter((line) => !/^\s+at .*[/\\]src[/\\]run-handlers\.ts:/.test(line))
    .join('\n');
}

/** A loopback server that records whether anything reached it (where a redirect would lead). */
async function startBystander(): Promise<{ url: string; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url} token=${String(req.headers[DEV_TOKEN_HEADER])}`);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"accepted":1}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/elsewhere`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A full garbage collection, made available at run time (vitest starts Node without --expose-gc). */
function collectGarbage(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** A failed delivery's record whose handler threw an error with a message of `size` characters. */
function bigFailure(size: number, eventId: string): DeliveryRecord {
  const thrown = new Error(`${eventId} ${'x'.repeat(size)}`);
  const err = new Error('A handler threw while handling the event.', { cause: thrown });
  return record({ eventId, outcome: 'failed', status: 500, code: 'handler_failed', err: err as never });
}

describe('devReporter bounds what it sends and keeps', () => {
  test.each([301, 302, 307, 308])(
    'a %i from the dashboard’s address is a failed report: not followed, the token goes nowhere else',
    async (status) => {
      const bystander = await startBystander();
      try {
        const hits: string[] = [];
        const server = createServer((req, res) => {
          hits.push(`${req.method} ${req.url}`);
          req.resume();
          res.writeHead(status, { location: bystander.url }).end();
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        const { port } = server.address() as AddressInfo;
        const reporter = devReporter({ url: `http://127.0.0.1:${port}/_dev/api/report?token=${TOKEN}` });
        reporter.error(record({ outcome: 'failed', status: 500 }), 'webhook delivery failed');
        await reporter.flush!();
        server.closeAllConnections();
        server.close();
        expect(hits).toEqual(['POST /_dev/api/report']);
        expect(bystander.hits).toEqual([]);
        expect(warn).toHaveBeenCalledOnce();
        const message = String(warn.mock.calls[0]![0]);
        expect(message).toContain(`HTTP ${status}`);
        expect(message).toContain('redirect');
        expect(message).not.toContain(TOKEN);
      } finally {
        await bystander.close();
      }
    },
  );

  test('200 failures with 100 KB messages while the dashboard is stuck: the queue stays within its bytes, messages and stacks are cut, drops are counted', async () => {
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => {
      release = resolve;
    });
    const bodies: number[] = [];
    dashboard = await startDashboard(async (post) => {
      bodies.push(Buffer.byteLength(JSON.stringify(post.batch)));
      if (post.batch.records[0]?.eventId === 'evt_first') await stuck;
      return { status: 200, body: { accepted: post.batch.records.length } };
    });
    const reporter = devReporter({ url: dashboard.reportUrl, flushIntervalMs: 5 });
    reporter.info(record({ eventId: 'evt_first' }), 'webhook delivery');
    await vi.waitFor(() => expect(dashboard!.posts).toHaveLength(1), WAIT);

    const gc = collectGarbage();
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    reporter.error(bigFailure(100_000, 'evt_big_0'), 'webhook delivery failed');
    // One record adds what its cut message and stacks weigh, not its 100 KB: logging it is bounded work.
    const one = reporter.queued!();
    expect(one.records).toBe(1);
    expect(one.bytes).toBeLessThan(2 * (4_096 + 16_384) + 2_048);
    let most = one.bytes;
    for (let i = 1; i < 200; i++) {
      reporter.error(bigFailure(100_000, `evt_big_${i}`), 'webhook delivery failed');
      most = Math.max(most, reporter.queued!().bytes);
    }
    const full = reporter.queued!();
    expect(most).toBeLessThanOrEqual(1_048_576);
    expect(full.bytes).toBeLessThanOrEqual(1_048_576);
    expect(full.records).toBeGreaterThan(10);
    expect(full.dropped).toBe(200 - full.records);
    gc();
    // 200 records of 100 KB (each kept twice: message and stack) would hold about 40 MB.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(16 * 1_048_576);

    release();
    await reporter.flush!();
    expect(reporter.queued!()).toEqual({ records: 0, bytes: 0, dropped: full.dropped });
    // The dashboard reads at most MAX_REQUEST_BYTES a post: every post fits.
    for (const size of bodies) expect(size).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
    const reports = dashboard.records().slice(1);
    expect(reports).toHaveLength(full.records);
    // The newest were kept, the oldest dropped.
    expect(reports.at(-1)!.eventId).toBe('evt_big_199');
    const cause = reports[0]!.error!.cause!;
    expect(cause.message).toMatch(/^evt_big_\d+ x{4000,}… \[truncated: \d+ more characters\]$/);
    expect(cause.message.length).toBeLessThan(4_096 + 64);
    expect(cause.stack!.length).toBeLessThan(16_384 + 64);
    // The stack keeps its frames: the message it repeats is cut as the message is.
    expect(cause.stack).toContain('dev-reporter.test.ts');
    expect(warn).toHaveBeenCalledOnce();
    expect(String(warn.mock.calls[0]![0])).toContain(`${full.dropped} record(s) were dropped`);
  });

  test('a record larger than maxQueuedBytes is dropped and counted; the others go', async () => {
    dashboard = await startDashboard();
    const reporter = devReporter({
      url: dashboard.reportUrl,
      maxQueuedBytes: 1_024,
      flushIntervalMs: 60_000,
    });
    reporter.info(record({ eventId: `evt_${'y'.repeat(2_000)}` }), 'webhook delivery');
    reporter.info(record({ eventId: 'evt_small' }), 'webhook delivery');
    expect(reporter.queued!()).toMatchObject({ records: 1, dropped: 1 });
    await reporter.flush!();
    expect(dashboard.records().map((report) => report.eventId)).toEqual(['evt_small']);
  });

  test('a post is never larger than the dashboard reads', () => {
    expect(MAX_BATCH_BYTES).toBe(MAX_REQUEST_BYTES);
  });
});

describe('devReporter leaves stderr as it is without a logger', () => {
  test('a handler failure and a wrong secret print the same on stderr with logger: devReporter(), with no dashboard, an unreachable one, or one that takes the reports', async () => {
    dashboard = await startDashboard();
    const [plain, noUrl, unreachable, reported] = await Promise.all([
      runFailingReceiver('none'),
      runFailingReceiver('reporter'),
      closedPortUrl().then((url) => runFailingReceiver('reporter', url)),
      runFailingReceiver('reporter', dashboard.reportUrl),
    ]);
    // What a receiver without a logger says: the failure with its causes, then the wrong secret.
    expect(plain.stdout.trim()).toBe('500 401 401 401');
    expect(plain.stderr).toContain(
      '[service-webhooks] HandlerFailedError (handler_failed): A handler threw while handling the event.',
    );
    expect(plain.stderr).toContain('could not mark the invoice unpaid');
    expect(plain.stderr).toContain('the ledger is down');
    expect(plain.stderr).toContain('were refused with invalid_signature');

    expect(noUrl.stdout).toBe(plain.stdout);
    expect(noUrl.stderr).toBe(plain.stderr);
    expect(unreachable.stdout).toBe(plain.stdout);
    expect(unreachable.stderr).toMatch(/^\[service-webhooks\] devReporter: could not reach the dashboard/m);
    expect(withoutReporterLines(unreachable.stderr)).toBe(withoutReporterLines(plain.stderr));
    // With a dashboard, the reports go there and stderr still says what it says without the reporter.
    expect(reported.stdout).toBe(plain.stdout);
    expect(withoutReporterLines(reported.stderr)).toBe(withoutReporterLines(plain.stderr));
    expect(dashboard.records().map((report) => report.status)).toEqual([500, 401, 401, 401]);
  }, 60_000);

  test('with a logger of your own, that logger gets the failure: no dashboard, or one that cannot be reached', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    for (const url of [undefined, await closedPortUrl()]) {
      const inner = recordingLogger();
      const reporter = devReporter({ url, logger: inner.logger });
      const webhooks = createWebhooks({ secret: SECRETS[0]!, logger: reporter });
      webhooks.on('payment.failed', () => {
        throw new Error('the ledger is down');
      });
      const answer = await deliver(webhooks, createTestEvent('payment.failed'), { secret: SECRETS[0]! });
      expect(answer.status).toBe(500);
      await reporter.flush?.();
      expect(inner.calls.map((call) => [call.level, call.message])).toEqual([
        ['error', 'webhook delivery failed'],
      ]);
      expect(inner.calls[0]!.record.err?.cause).toEqual(new Error('the ledger is down'));
    }
    // Your logger shows failures, so the receiver does not print them a second time.
    expect(error).not.toHaveBeenCalled();
  });
});

describe('devReporter options', () => {
  test.each([
    [{ url: 'not a url' }, /devReporter\(\{ url \}\) is not a URL/],
    [{ url: 'ftp://127.0.0.1/report' }, /must be an http:\/\/ or https:\/\/ URL/],
    [{ url: 42 }, /devReporter\(\{ url \}\) must be a string/],
    [{ flushIntervalMs: 0 }, /flushIntervalMs \}\) must be a positive number/],
    [{ flushIntervalMs: -5 }, /flushIntervalMs/],
    [{ flushIntervalMs: Number.NaN }, /flushIntervalMs/],
    [{ flushIntervalMs: '50' }, /flushIntervalMs/],
    [{ maxQueued: 0 }, /maxQueued \}\) must be a whole number of at least 1/],
    [{ maxQueued: 1.5 }, /maxQueued/],
    [{ maxQueuedBytes: 1_023 }, /maxQueuedBytes \}\) must be a whole number of at least 1024/],
    [{ maxQueuedBytes: '1mb' }, /maxQueuedBytes/],
    [{ logger: {} }, /needs an object with info, warn and error methods/],
    [{ logger: console.log }, /needs an object/],
  ])('%o throws a ConfigurationError that says what to change', (options, message) => {
    expect(() => devReporter(options as never)).toThrow(ConfigurationError);
    expect(() => devReporter(options as never)).toThrow(message);
  });

  test('a malformed SERVICE_WEBHOOKS_DEV_URL throws a ConfigurationError naming the variable', () => {
    vi.stubEnv(DEV_URL_ENV, '127.0.0.1:4010/_dev/api/report');
    expect(() => devReporter()).toThrow(ConfigurationError);
    expect(() => devReporter()).toThrow(/SERVICE_WEBHOOKS_DEV_URL is not a URL/);
  });

  test('options are checked even without a URL, so a mistake shows in development and production alike', () => {
    expect(() => devReporter({ flushIntervalMs: 0 })).toThrow(ConfigurationError);
  });
});
