/**
 * The throttle counter: `webhook.inbox.throttled`, one per entry a worker deferred by flow control,
 * with the queue and the reason as its only attributes (bounded; no event id, no key).
 */
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { openTelemetry } from 'service-webhooks/opentelemetry';
import { expect, test } from 'vitest';

class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

test('webhook.inbox.throttled counts by queue and reason, and carries nothing else', async () => {
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const telemetry = openTelemetry({ meterProvider });
  telemetry.throttled?.('inbox', 'rate');
  telemetry.throttled?.('inbox', 'rate');
  telemetry.throttled?.('inbox', 'downstream');
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics
    .flatMap((scope) => scope.metrics)
    .find((candidate) => candidate.descriptor.name === 'webhook.inbox.throttled');
  const points = (metric?.dataPoints ?? []).map((point) => [point.attributes, point.value]);
  expect(points).toEqual([
    [{ 'messaging.destination.name': 'inbox', 'webhook.throttle.reason': 'rate' }, 2],
    [{ 'messaging.destination.name': 'inbox', 'webhook.throttle.reason': 'downstream' }, 1],
  ]);
  await meterProvider.shutdown();
});
