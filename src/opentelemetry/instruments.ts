import type { Counter, Histogram, Meter } from '@opentelemetry/api';

/**
 * Bucket boundaries, in seconds, for the two durations: OpenTelemetry's HTTP server boundaries, up to
 * the 25 s handler budget and the sender's 30 s attempt timeout, past which a delivery has failed.
 */
const DURATION_BUCKETS_S = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 25, 30,
];

/** The receiver's metric instruments, made once per plug-in. */
export interface Instruments {
  /** What the sender was answered, one per answer: `webhook.outcome`, `webhook.event.type`, `error.type`. */
  readonly deliveries: Counter;
  readonly deliveryDuration: Histogram;
  readonly handlerDuration: Histogram;
  readonly leaseLost: Counter;
  /** A worker's runs of inbox entries, apart from the sender's deliveries, and the dead letters. */
  readonly inboxRuns: Counter;
}

export function createInstruments(meter: Meter): Instruments {
  const advice = { explicitBucketBoundaries: DURATION_BUCKETS_S };
  return {
    deliveries: meter.createCounter('webhook.deliveries', {
      description: 'Webhook deliveries answered, by outcome (what the sender was told).',
      unit: '{delivery}',
    }),
    deliveryDuration: meter.createHistogram('webhook.delivery.duration', {
      description: 'From a delivery reaching the receiver to its answer.',
      unit: 's',
      advice,
    }),
    handlerDuration: meter.createHistogram('webhook.handler.duration', {
      description: "A delivery's handlers, in order, from the first one's start to the last one's end.",
      unit: 's',
      advice,
    }),
    leaseLost: meter.createCounter('webhook.lease.lost', {
      description: 'Runs whose claim another attempt took over while their handlers still ran.',
      unit: '{run}',
    }),
    inboxRuns: meter.createCounter('webhook.inbox.runs', {
      description:
        "An inbox worker's runs, by outcome (handled, duplicate, stale, failed; rejected with error.type event_in_progress when another worker holds the event, or resource_busy when another event of its resource is being handled), and the entries dead-lettered.",
      unit: '{run}',
    }),
  };
}
