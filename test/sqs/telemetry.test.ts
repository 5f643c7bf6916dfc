/**
 * The SQS inbox with the receiver's openTelemetry() plug-in on a real SDK: each worker run joins the
 * delivery's trace (the door's traceparent rides as a message attribute), and a dead letter is counted.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createWebhooks, MemoryStore } from 'service-webhooks';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { sqsInbox, startSqsWorker } from 'service-webhooks/sqs';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type OpenTelemetryHarness, startOpenTelemetry } from '../support/opentelemetry.js';
import { waitUntil } from '../support/wait-until.js';
import { createQueues, deliverTo, type Fauxqs, SECRET, startSqs } from './support.js';

let sqs: Fauxqs;
let client: SQSClient;
let otel: OpenTelemetryHarness;

beforeAll(async () => {
  sqs = await startSqs();
  client = sqs.client();
  otel = startOpenTelemetry();
});
afterAll(async () => {
  await otel?.shutdown();
  client?.destroy();
  await sqs?.stop();
});

test("each attempt is a span of the door's trace; the last one counts a dead letter", async () => {
  const q = await createQueues(client, 'telemetry');
  const { tracerProvider, meterProvider } = otel;
  const store = new MemoryStore();
  const door = createWebhooks({
    secret: SECRET,
    store,
    inbox: sqsInbox({ client, queueUrl: q.queueUrl }),
    telemetry: openTelemetry({ tracerProvider, meterProvider }),
  });
  door.onError(() => {});
  const consumer = createWebhooks({
    secret: SECRET,
    store,
    telemetry: openTelemetry({ tracerProvider, meterProvider }),
  });
  const errors: string[] = [];
  consumer.onError((error) => {
    errors.push(error.code);
  });
  consumer.on('payment.failed', () => {
    throw new RangeError('ledger is closed');
  });
  expect((await deliverTo(door, createTestEvent('payment.failed'))).status).toBe(200);
  const worker = startSqsWorker(consumer, {
    client,
    queueUrl: q.queueUrl,
    attempts: 2,
    backoff: [1_000],
    waitTimeSeconds: 1,
    monitor: false,
  });
  await waitUntil('the dead letter', () => errors.includes('event_dead_lettered'), 20_000);
  await worker.close();
  await otel.collect();
  const delivery = otel.span('webhook.delivery');
  const runs = otel.spans().filter((span) => span.name === 'webhook.inbox.run');
  expect(runs.map((run) => run.attributes['webhook.attempt'])).toEqual([1, 2]);
  for (const run of runs) {
    expect(run.spanContext().traceId).toBe(delivery.spanContext().traceId);
    expect(run.parentSpanContext?.spanId).toBe(delivery.spanContext().spanId);
  }
  expect(
    otel.count('webhook.inbox.runs', {
      'webhook.outcome': 'dead_lettered',
      'webhook.event.type': 'payment.failed',
    }),
  ).toBe(1);
  await q.delete();
});
