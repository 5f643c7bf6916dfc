/**
 * The inbox gauges' read is bounded by the core's deadline helper (`withDeadline`), the one the
 * store calls and the schema check use, not a timer of the plug-in's own: a read that never settles
 * (a BullMQ client waiting for Redis to come back) is given up after 2 s and reported as a collection
 * error, and the other metrics are still exported. Collections that overlap share the read that waits.
 */
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import type { InboxGauges } from 'service-webhooks/core';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { expect, test } from 'vitest';

/** A reader the test collects from when it wants; the harness's drops the collection errors this reads. */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

test('a gauge read that never settles is given up after 2 s with the core deadline error; the counters still come', async () => {
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const telemetry = openTelemetry({ meterProvider });
  telemetry.deadLettered('user.created');
  let reads = 0;
  const stop = telemetry.observeInbox(() => {
    reads += 1;
    return new Promise<InboxGauges>(() => {});
  });

  const started = performance.now();
  const [first, overlapping] = await Promise.all([reader.collect(), reader.collect()]);
  const took = performance.now() - started;

  expect(reads).toBe(1);
  expect(took).toBeGreaterThanOrEqual(1_900);
  expect(took).toBeLessThan(10_000);
  for (const { errors, resourceMetrics } of [first, overlapping]) {
    expect(errors.map((error) => `${(error as Error).name}: ${(error as Error).message}`)).toEqual([
      'DeadlineExceeded: service-webhooks: the inbox gauges did not answer within 2000 ms.',
    ]);
    const names = resourceMetrics.scopeMetrics.flatMap((scope) =>
      scope.metrics.map((m) => m.descriptor.name),
    );
    expect(names).toContain('webhook.inbox.runs');
  }
  stop();
  await meterProvider.shutdown();
});
