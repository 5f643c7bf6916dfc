import type { IncomingMessage, ServerResponse } from 'node:http';
import { DeadLetterError, EVENT_TYPES, type InboxAdmin, isKnownEventType } from 'service-webhooks/core';
import { createTestEvent } from 'service-webhooks/testing';
import type { ReceiverReport, ReportBatch } from '../dev/report.js';
import type { Account } from '../sandbox/account.js';
import { ApiError } from '../sandbox/api-errors.js';
import type { DeliveryScheduler } from '../sandbox/delivery-scheduler.js';
import { readJsonBody, sendJson } from '../sandbox/http-io.js';
import type { Delivery, WebhookRegistration } from '../sandbox/index.js';
import type { DashboardState, DevDelivery, InboxView, SendRequest } from './api-types.js';
import { fixtureFile, testFile } from './delivery-export.js';
import type { EventStream } from './event-stream.js';
import type { ReportJoiner } from './report-join.js';

/** An answer the API refuses with, as `{ error: { code, message } }`. */
export class DashboardApiError extends Error {
  override name = 'DashboardApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the API works on: the dev account, its registration, the scheduler, the stream. */
export interface DashboardContext {
  readonly account: Account;
  readonly registration: () => WebhookRegistration;
  readonly scheduler: DeliveryScheduler;
  readonly stream: EventStream;
  readonly joiner: ReportJoiner;
  readonly inbox: InboxAdmin | undefined;
  readonly state: () => Omit<DashboardState, 'samples' | 'event_types'>;
  readonly view: (delivery: Delivery) => DevDelivery;
  readonly reported: (at: string) => void;
  /** The samples `GET /state` handed out, by event id, as JSON. */
  readonly issuedSamples: Map<string, string>;
}

/** How many dead letters the inbox panel lists. */
const DEAD_LETTER_PAGE = 50;
/** How old `created` is in the `stale_created` case: two days, past any sensible tolerance. */
const STALE_SECONDS = 2 * 24 * 3600;
const CASES = ['sent', 'forged_signature', 'stale_created', 'concurrent_copies'] as const;

/** How many handed-out samples are remembered, to tell a sample sent as it was from an edited one. */
const ISSUED_SAMPLES = 100;

function samples(issued: Map<string, string>): Record<string, Record<string, unknown>> {
  const made = EVENT_TYPES.map(
    (type) => createTestEvent(type, { livemode: false }) as unknown as Record<string, unknown>,
  );
  for (const sample of made) {
    issued.set(sample.id as string, JSON.stringify(sample));
    if (issued.size > ISSUED_SAMPLES) issued.delete(issued.keys().next().value!);
  }
  return Object.fromEntries(made.map((sample) => [sample.type, sample]));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// The page may send anything it was edited into; the receiver is what judges it, so only what the
// sandbox itself needs (an id to deduplicate by, a type to label the row) is required.
function eventOf(request: SendRequest): Record<string, unknown> & { id: string; type: string } {
  if (request.event !== undefined) {
    const event = request.event;
    if (!isObject(event) || typeof event.id !== 'string' || typeof event.type !== 'string') {
      throw new DashboardApiError(
        400,
        'invalid_event',
        'The event must be a JSON object with a string id and type.',
      );
    }
    return event as Record<string, unknown> & { id: string; type: string };
  }
  const type = request.type;
  if (typeof type !== 'string' || !isKnownEventType(type)) {
    throw new DashboardApiError(400, 'invalid_type', `type must be one of ${EVENT_TYPES.join(', ')}.`);
  }
  return createTestEvent(type, { livemode: false }) as unknown as Record<string, unknown> & {
    id: string;
    type: string;
  };
}

function send(context: DashboardContext, body: unknown): Delivery[] {
  if (!isObject(body)) throw new DashboardApiError(400, 'invalid_request', 'The body must be a JSON object.');
  const request = body as SendRequest;
  const sendCase = request.case ?? 'sent';
  if (!(CASES as readonly string[]).includes(sendCase)) {
    throw new DashboardApiError(400, 'invalid_case', `case must be one of ${CASES.join(', ')}.`);
  }
  let event = eventOf(request);
  const { account, scheduler } = context;
  const registration = context.registration();
  // The sandbox's events are typed; an edited one may be anything, which is the point of editing it.
  const dispatch = (how: Parameters<DeliveryScheduler['deliverTo']>[3]) =>
    scheduler.deliverTo(account, registration, event as never, how);
  switch (sendCase) {
    case 'forged_signature':
      return [dispatch({ label: 'forged_signature', retried: false, forged: true })];
    case 'stale_created':
      event = { ...event, created: Math.floor(Date.now() / 1000) - STALE_SECONDS };
      return [dispatch({ label: 'stale_created', retried: false })];
    case 'concurrent_copies':
      // Both leave on the same tick: the receiver sees two copies of one event in flight at once.
      return [dispatch({ label: 'concurrent_copy' }), dispatch({ label: 'concurrent_copy' })];
    default:
      return [dispatch({ label: request.event === undefined ? 'sent' : labelOf(context, event) })];
  }
}

/**
 * `sent` for a sample sent as it was handed out, `replay` for a delivered event sent unchanged (its
 * detail's "Edit and resend", not edited), `edited` for anything else.
 */
function labelOf(context: DashboardContext, event: { id: string }): string {
  const text = JSON.stringify(event);
  for (const delivery of context.account.deliveries.values()) {
    if (delivery.event_id === event.id && JSON.stringify(delivery.event) === text) return 'replay';
  }
  return context.issuedSamples.get(event.id) === text ? 'sent' : 'edited';
}

function replay(context: DashboardContext, id: string): Delivery[] {
  const original = context.account.deliveries.get(id);
  if (original === undefined) throw new DashboardApiError(404, 'delivery_not_found', `No delivery ${id}.`);
  return [
    context.scheduler.deliverTo(context.account, context.registration(), original.event, { label: 'replay' }),
  ];
}

async function inboxView(admin: InboxAdmin): Promise<InboxView> {
  const [stats, page] = await Promise.all([admin.stats(), admin.list({ limit: DEAD_LETTER_PAGE })]);
  return { engine: admin.engine, stats, dead_letters: page.items, more: page.total > page.items.length };
}

function checkReports(body: unknown): readonly ReceiverReport[] {
  const records = isObject(body) ? (body as Partial<ReportBatch>).records : undefined;
  if (
    !Array.isArray(records) ||
    !records.every((record) => isObject(record) && typeof record.status === 'number')
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
  const segments = path.split('/').filter(Boolean).map(decodeURIComponent);
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
        return context.stream.listen(response);
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
        for (const record of records) {
          const joined = context.joiner.add(record, [...context.account.deliveries.values()].reverse());
          if (joined !== undefined) context.stream.send({ type: 'delivery', data: context.view(joined) });
          context.reported(record.at);
        }
        if (records.length > 0) context.account.changed();
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

// `/deliveries/:id/…` and `/inbox/dead-letters/:id/…`: the segment after a collection name is an id.
function isIdSegment(segments: readonly string[], index: number): boolean {
  const before = segments[index - 1];
  return (before === 'deliveries' && index === 1) || (before === 'dead-letters' && index === 2);
}
