import type { IncomingMessage, ServerResponse } from 'node:http';
import { DeadLetterError, EVENT_TYPES, type InboxAdmin } from 'service-webhooks/core';
import type { ReceiverReport, ReportBatch } from '../dev/report.js';
import { isPlainObject } from '../parsing/plain-object.js';
import { ApiError } from '../sandbox/api-errors.js';
import { readJsonBody, sendJson } from '../sandbox/http-io.js';
import { newId } from '../sandbox/ids.js';
import type { Delivery } from '../sandbox/index.js';
import type { InboxView, SentRecord } from './api-types.js';
import { DashboardApiError, type DashboardContext } from './dashboard-context.js';
import { fixtureFile, testFile } from './delivery-export.js';
import { samples, send } from './send-cases.js';

/** How many dead letters the inbox panel lists. */
const DEAD_LETTER_PAGE = 50;

/**
 * Send the event of delivery `id` again, unchanged, as a new delivery labelled `replay`: the page's
 * Replay button and the MCP tool `replay_delivery`.
 *
 * @example
 * ```ts
 * const [again] = replay(context, 'dlv_123');
 * ```
 */
export function replay(context: DashboardContext, id: string): Delivery[] {
  const original = context.account.deliveries.get(id);
  if (original === undefined) throw new DashboardApiError(404, 'delivery_not_found', `No delivery ${id}.`);
  return [
    context.scheduler.deliverTo(context.account, context.registration(), original.event, { label: 'replay' }),
  ];
}

/**
 * Send the scheduled retry of delivery `id` now (the page's "retry now" and the MCP tool's): 404
 * `delivery_not_found`, or 409 `no_retry_scheduled` when none waits (settled, or an attempt on its way).
 *
 * @example
 * ```ts
 * const delivery = retryNow(context, 'dlv_123');
 * ```
 */
export function retryNow(context: DashboardContext, id: string): Delivery {
  const result = context.scheduler.retryNow(context.account, id);
  if (result === 'not_found') throw new DashboardApiError(404, 'delivery_not_found', `No delivery ${id}.`);
  if (result !== 'sent') {
    const why =
      result === 'settled' ? 'it is settled: replay it instead' : 'an attempt of it is on its way now';
    throw new DashboardApiError(409, 'no_retry_scheduled', `Delivery ${id} has no retry waiting: ${why}.`);
  }
  return context.account.deliveries.get(id)!;
}

const SENT_STRINGS = ['url', 'started_at', 'response_body'] as const;

function isStringRecord(value: unknown): value is Record<string, string> {
  return isPlainObject(value) && Object.values(value).every((each) => typeof each === 'string');
}

function checkSent(body: unknown): SentRecord {
  const record = body as Partial<Record<keyof SentRecord, unknown>>;
  const valid =
    isPlainObject(body) &&
    isPlainObject(record.event) &&
    typeof record.event.id === 'string' &&
    typeof record.event.type === 'string' &&
    SENT_STRINGS.every((key) => typeof record[key] === 'string') &&
    typeof record.duration_ms === 'number' &&
    (record.status === null || typeof record.status === 'number') &&
    (record.error === null || typeof record.error === 'string') &&
    (record.code === null || typeof record.code === 'string') &&
    (record.retry_after === null || typeof record.retry_after === 'string') &&
    typeof record.duplicate === 'boolean' &&
    isStringRecord(record.request_headers) &&
    isStringRecord(record.response_headers) &&
    !Number.isNaN(Date.parse(record.started_at as string));
  if (!valid) {
    throw new DashboardApiError(
      400,
      'invalid_sent_record',
      'A sent record is a SentRecord (see api-types.ts).',
    );
  }
  return body as unknown as SentRecord;
}

/**
 * An attempt `service-webhooks send` made while the dashboard runs, recorded as a delivery of its own
 * (`cli`): settled as it was answered, never retried here (the command does not retry either).
 */
function recordSent(context: DashboardContext, sent: SentRecord): Delivery {
  const ok = sent.status !== null && sent.status >= 200 && sent.status < 300;
  const event = sent.event as unknown as Delivery['event'];
  const delivery: Delivery = {
    id: newId('dlv'),
    webhook_id: context.registration().id,
    event_id: event.id,
    event_type: event.type,
    status: ok ? 'succeeded' : 'failed',
    attempts: [
      {
        attempt: 1,
        started_at: sent.started_at,
        duration_ms: sent.duration_ms,
        status: sent.status,
        error: sent.error,
        response_body: sent.response_body,
        code: sent.code,
        duplicate: sent.duplicate,
        retry_after: sent.retry_after,
        request_headers: { ...sent.request_headers },
        response_headers: { ...sent.response_headers },
      },
    ],
    next_attempt_at: null,
    created_at: sent.started_at,
    event,
    label: 'cli',
    retried: false,
  };
  context.account.addDelivery(delivery);
  context.account.changed();
  context.joiner.attemptRecorded(delivery);
  context.changed(delivery);
  return delivery;
}

async function inboxView(admin: InboxAdmin): Promise<InboxView> {
  const [stats, page] = await Promise.all([admin.stats(), admin.list({ limit: DEAD_LETTER_PAGE })]);
  return { engine: admin.engine, stats, dead_letters: page.items, more: page.total > page.items.length };
}

function checkReports(body: unknown): readonly ReceiverReport[] {
  const records = isPlainObject(body) ? (body as Partial<ReportBatch>).records : undefined;
  if (
    !Array.isArray(records) ||
    !records.every((record) => isPlainObject(record) && typeof record.status === 'number')
  ) {
    throw new DashboardApiError(400, 'invalid_report', 'A report is { records: ReceiverReport[] }.');
  }
  return records as ReceiverReport[];
}

function requireInbox(context: DashboardContext): InboxAdmin {
  if (context.inbox === undefined) {
    throw new DashboardApiError(404, 'no_inbox', 'No inbox: start service-webhooks dev with --inbox URL.');
  }
  return context.inbox;
}

function download(response: ServerResponse, file: { name: string; type: string; text: string }): number {
  response.writeHead(200, {
    'content-type': file.type,
    'content-disposition': `attachment; filename="${file.name}"`,
    'content-length': Buffer.byteLength(file.text),
    'cache-control': 'no-store',
  });
  response.end(file.text);
  return 200;
}

/**
 * Answer one `/_dev/api/*` request (already past the request guard): the routes api-types.ts lists.
 */
export async function answerApi(
  context: DashboardContext,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  secret: () => string,
): Promise<number> {
  const path = url.pathname.slice('/_dev/api'.length);
  const method = request.method ?? 'GET';
  const json = (status: number, body: unknown) => {
    sendJson(response, status, body, { 'cache-control': 'no-store' });
    return status;
  };
  const segments = decodedSegments(path);
  if (segments === undefined) {
    return json(400, {
      error: {
        code: 'invalid_request',
        message: `The path /_dev/api${path} holds a malformed percent-escape.`,
      },
    });
  }
  const route = `${method} /${segments.map((segment, index) => (index > 0 && isIdSegment(segments, index) ? ':id' : segment)).join('/')}`;
  const id = segments.find((_, index) => index > 0 && isIdSegment(segments, index)) ?? '';
  try {
    switch (route) {
      case 'GET /state':
        return json(200, {
          ...context.state(),
          event_types: EVENT_TYPES,
          samples: samples(context.issuedSamples),
        });
      case 'GET /secret':
        return json(200, { secret: secret() });
      case 'GET /events':
        return context.stream.listen(request, response, url);
      case 'GET /deliveries':
        return json(200, { data: [...context.account.deliveries.values()].reverse().map(context.view) });
      case 'DELETE /deliveries': {
        let deleted = 0;
        for (const [deliveryId, delivery] of context.account.deliveries) {
          // A delivery still being attempted stays: its retries would come back as rows of nothing.
          if (delivery.status === 'pending') continue;
          context.account.deliveries.delete(deliveryId);
          deleted++;
        }
        context.account.changed();
        context.stream.send({ type: 'cleared', data: {} });
        for (const delivery of context.account.deliveries.values()) {
          context.stream.send({ type: 'delivery', data: context.view(delivery) });
        }
        return json(200, { deleted });
      }
      case 'POST /send': {
        const made = send(context, await readJsonBody(request));
        return json(202, { data: made.map(context.view) });
      }
      case 'POST /deliveries/:id/replay':
        return json(202, { data: replay(context, id).map(context.view) });
      case 'POST /deliveries/:id/retry':
        return json(202, { data: [context.view(retryNow(context, id))] });
      case 'POST /sent': {
        const delivery = recordSent(context, checkSent(await readJsonBody(request)));
        return json(201, { data: [context.view(delivery)] });
      }
      case 'GET /deliveries/:id/export': {
        const delivery = context.account.deliveries.get(id);
        if (delivery === undefined)
          throw new DashboardApiError(404, 'delivery_not_found', `No delivery ${id}.`);
        const as = url.searchParams.get('as') ?? 'fixture';
        if (as !== 'fixture' && as !== 'test') {
          throw new DashboardApiError(400, 'invalid_export', 'as must be fixture or test.');
        }
        const view = context.view(delivery);
        return download(response, as === 'test' ? testFile(view) : fixtureFile(view));
      }
      case 'POST /report': {
        const records = checkReports(await readJsonBody(request));
        // Newest first, listed once per batch: joining a report changes no delivery's place in the list.
        const newestFirst = [...context.account.deliveries.values()].reverse();
        for (const record of records) {
          const joined = context.joiner.add(record, newestFirst);
          if (joined === undefined) continue;
          // A worker's run that came before its door's report waited for it: it joins now.
          context.joiner.attemptRecorded(joined);
          context.changed(joined);
        }
        if (records.length > 0) {
          context.account.changed();
          context.reported(records.at(-1)!.at);
        }
        return json(200, { accepted: records.length });
      }
      case 'GET /inbox':
        return json(200, await inboxView(requireInbox(context)));
      case 'GET /inbox/dead-letters/:id': {
        const letter = await requireInbox(context).get(id);
        if (letter === undefined)
          throw new DashboardApiError(404, 'dead_letter_not_found', `No dead letter ${id}.`);
        return json(200, letter);
      }
      case 'POST /inbox/dead-letters/:id/replay':
        return json(202, await requireInbox(context).replay(id));
      case 'DELETE /inbox/dead-letters/:id': {
        const admin = requireInbox(context);
        const removed = (await admin.get(id)) !== undefined;
        if (removed) await admin.remove(id);
        return json(200, { removed });
      }
      default:
        throw new DashboardApiError(404, 'not_found', `No route ${method} /_dev/api${path}.`);
    }
  } catch (error) {
    if (error instanceof DashboardApiError) {
      return json(error.status, { error: { code: error.code, message: error.message } });
    }
    if (error instanceof DeadLetterError) {
      return json(404, { error: { code: error.code, message: error.message } });
    }
    // The sandbox's own request errors: a body too large, or not JSON.
    if (error instanceof ApiError) return json(error.status, error.body);
    throw error;
  }
}

// `undefined` when a segment is no valid percent-encoding (`%zz`, a cut UTF-8 sequence).
function decodedSegments(path: string): string[] | undefined {
  try {
    return path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

// `/deliveries/:id/…` and `/inbox/dead-letters/:id/…`: the segment after a collection name is an id.
function isIdSegment(segments: readonly string[], index: number): boolean {
  const before = segments[index - 1];
  return (before === 'deliveries' && index === 1) || (before === 'dead-letters' && index === 2);
}
