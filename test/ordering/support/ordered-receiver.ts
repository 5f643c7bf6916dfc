/**
 * The receiver the ordering property test drives, the same in this process and in its worker
 * processes (../fixtures/ordering-worker.ts): `user.*` under `latest`, `project.*` under `serialize`,
 * one handler each that logs its run (./handler-log.ts) around a short random pause, so that a run
 * spans real time in which another could overlap it. And the worker: a queue of events delivered
 * one after another, each until it is answered 200 (handled, duplicate or stale), every other answer
 * retried after a short pause as the sender would (Retry-After's seconds shortened to milliseconds:
 * what is tested is that the retry is answered right, not the sender's patience).
 */
import {
  createWebhooks,
  DUPLICATE_HEADER,
  type IdempotencyStore,
  type WebhookEvent,
  type Webhooks,
} from 'service-webhooks';
import { deliver } from 'service-webhooks/testing';
import type { HandlerLog } from './handler-log.js';
import { expectedPosition, type ScenarioEvent } from './ordering-scenario.js';

export const ORDERING_SECRET = 'whsec_ordering_property';
const STALE_HEADER = 'x-webhook-stale';

/** How many answers but 200 one delivery may get before the worker gives it up (and the run fails). */
const MAX_ATTEMPTS = 2_000;

export interface OrderedReceiverOptions {
  store: IdempotencyStore;
  log: HandlerLog;
  /** Longest pause inside a handler, in ms. */
  pauseMs?: number;
  storeTimeoutMs?: number;
  dedupTtlSeconds?: number;
  maxEventAgeSeconds?: number;
}

export function orderedReceiver(options: OrderedReceiverOptions): Webhooks {
  const webhooks = createWebhooks({
    secret: ORDERING_SECRET,
    store: options.store,
    ordering: { 'user.*': 'latest', 'project.*': 'serialize' },
    ...(options.storeTimeoutMs !== undefined && { storeTimeoutMs: options.storeTimeoutMs }),
    ...(options.dedupTtlSeconds !== undefined && { dedupTtlSeconds: options.dedupTtlSeconds }),
    ...(options.maxEventAgeSeconds !== undefined && { maxEventAgeSeconds: options.maxEventAgeSeconds }),
  });
  const pauseMs = options.pauseMs ?? 4;
  const handler = async (event: Pick<WebhookEvent, 'id' | 'type' | 'created'> & { data: object }) => {
    const data = event.data as ScenarioEvent['data'];
    const run = {
      resource: `${data.object}:${data.id}`,
      eventId: event.id,
      position: expectedPosition(event),
      version: data.version,
    };
    await options.log.begin(run);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * pauseMs));
    await options.log.end(run);
  };
  webhooks.on('user.*', handler);
  webhooks.on('project.*', handler);
  return webhooks;
}

/** What a worker's deliveries were answered, counted. */
export interface Answers {
  handled: number;
  duplicate: number;
  stale: number;
  busy: number;
  other: number;
}

export function noAnswers(): Answers {
  return { handled: 0, duplicate: 0, stale: 0, busy: 0, other: 0 };
}

/** Deliver `queue` in order, each event until it is answered 200; throws on an answer no retry fixes. */
export async function deliverQueue(
  webhooks: Webhooks,
  queue: readonly ScenarioEvent[],
  answers: Answers,
): Promise<void> {
  for (const event of queue) {
    for (let attempt = 0; ; attempt++) {
      if (attempt === MAX_ATTEMPTS) throw new Error(`${event.id} was never answered 200`);
      const response = await deliver(
        webhooks,
        { ...event, livemode: false, pending_webhooks: 1, request: null },
        {
          secret: ORDERING_SECRET,
        },
      );
      if (response.status === 200) {
        if (response.headers[STALE_HEADER] === 'true') answers.stale++;
        else if (response.headers[DUPLICATE_HEADER] === 'true') answers.duplicate++;
        else answers.handled++;
        break;
      }
      if (response.status === 409) answers.busy++;
      else if (response.status === 503) answers.other++;
      else throw new Error(`${event.id} was answered ${response.status}: ${response.body}`);
      await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 10));
    }
  }
}
