import {
  type BatchObservableCallback,
  context,
  createNoopMeter,
  type Link,
  type Meter,
  type MeterProvider,
  metrics,
  type Observable,
  SpanKind,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import {
  ConfigurationError,
  type DeliveryTelemetry,
  type InboxGauges,
  type InboxRunStart,
  type ThrottleReason,
  TimeoutQueue,
  type WebhookTelemetry,
  withDeadline,
} from 'service-webhooks/core';
import { registeredGlobals, unseenGlobals } from './api-check.js';
import { ATTRIBUTES, boundedEventType } from './attributes.js';
import { DeliverySpan } from './delivery-span.js';
import { createInstruments, type Instruments } from './instruments.js';
import { parseTraceparent, withRemoteParent } from './trace-context.js';
import { VERSION } from './version.js';

/** The class of the API's no-op meter: what `getMeter` gives while no SDK is registered. */
const NOOP_METER = createNoopMeter().constructor;

/**
 * How long a collection waits for an inbox engine's gauges. The read goes to the queue's backend,
 * which may be down, and a BullMQ worker's client waits for Redis to come back rather than fail: a
 * reader with no timeout of its own (a Prometheus scrape) would otherwise wait with it, and lose every
 * other metric of the process for as long as the outage lasts.
 */
const GAUGE_READ_TIMEOUT_MS = 2_000;

/**
 * The instrumentation scope: the tracer's and the meter's name.
 *
 * @example
 * ```ts
 * const spans = exporter.getFinishedSpans().filter((span) => span.instrumentationScope.name === SCOPE_NAME);
 * ```
 */
export const SCOPE_NAME = 'service-webhooks';

/**
 * Where {@link openTelemetry} sends what it records. Each defaults to the provider registered with
 * `@opentelemetry/api` (what `NodeSDK.start()` or `provider.register()` sets).
 *
 * @example
 * ```ts
 * createWebhooks({ secret, telemetry: openTelemetry({ tracerProvider, meterProvider }) });
 * ```
 */
export interface OpenTelemetryOptions {
  readonly tracerProvider?: TracerProvider;
  readonly meterProvider?: MeterProvider;
}

class OpenTelemetryPlugin implements WebhookTelemetry {
  /** Where `#tracer` came from: the app's own provider, or the global one as last read. */
  #tracerProvider: TracerProvider;
  #tracer: Tracer;
  readonly #meterProvider: MeterProvider | undefined;
  readonly #usesGlobals: { readonly tracerProvider: boolean; readonly meterProvider: boolean };
  /** Made at first use: the global meter provider has no proxy, so one read before the SDK starts would be the no-op for good. */
  #meter: Meter | undefined;
  #instruments: Instruments | undefined;
  /** Whether the meter records: false for the API's no-op meter (no SDK when first used). */
  #metering = false;
  #checked = false;
  /** Bounds each collection's read of an inbox engine's gauges; its timer is unref'd, so a collection never keeps a process alive. */
  readonly #gaugeDeadlines = new TimeoutQueue(GAUGE_READ_TIMEOUT_MS);

  constructor(options: OpenTelemetryOptions) {
    this.#usesGlobals = {
      tracerProvider: options.tracerProvider === undefined,
      meterProvider: options.meterProvider === undefined,
    };
    const unseen = unseenGlobals(this.#usesGlobals);
    if (unseen) throw new ConfigurationError(`openTelemetry(): ${unseen}`);
    this.#tracerProvider = options.tracerProvider ?? trace.getTracerProvider();
    this.#tracer = this.#tracerProvider.getTracer(SCOPE_NAME, VERSION);
    this.#meterProvider = options.meterProvider;
  }

  /**
   * Whether a span could be recorded: a provider of the app's own, or one registered globally. Read
   * per delivery, so an SDK started later is followed; without one, a delivery costs this look-up
   * rather than a no-op span and its context (issue 31: at most 0.3 µs with the API alone).
   */
  #tracing(): boolean {
    return !this.#usesGlobals.tracerProvider || registeredGlobals()?.trace !== undefined;
  }

  /**
   * The tracer of the global provider as it is now. Before an SDK registers, this copy of the API
   * answers its own proxy, which an SDK registering through this copy later sets, so a tracer taken
   * from it follows. An SDK registering through another copy (a newer minor version, which this one
   * reads) sets that copy's proxy instead: this one's would stay a no-op for good, and every delivery
   * would go unrecorded without a word. So the provider is read per delivery (one global look-up),
   * and the tracer taken again when it changed.
   */
  #currentTracer(): Tracer {
    if (!this.#usesGlobals.tracerProvider) return this.#tracer;
    const provider = trace.getTracerProvider();
    if (provider !== this.#tracerProvider) {
      this.#tracerProvider = provider;
      this.#tracer = provider.getTracer(SCOPE_NAME, VERSION);
    }
    return this.#tracer;
  }

  startDelivery(): DeliveryTelemetry | undefined {
    const instruments = this.#instruments ?? this.#firstUse();
    if (!this.#metering && !this.#tracing()) return undefined;
    const parent = context.active();
    const tracer = this.#currentTracer();
    const span = tracer.startSpan('webhook.delivery', { kind: SpanKind.INTERNAL }, parent);
    if (!this.#metering && !span.isRecording()) return undefined;
    return new DeliverySpan(tracer, instruments, span, parent, false);
  }

  startInboxRun({ traceparent, attempt, replayId }: InboxRunStart): DeliveryTelemetry | undefined {
    const instruments = this.#instruments ?? this.#firstUse();
    if (!this.#metering && !this.#tracing()) return undefined;
    const active = context.active();
    const door = parseTraceparent(traceparent);
    const links: Link[] = [];
    let parent = active;
    if (door !== undefined && replayId === undefined) {
      // One event's journey is one trace: the run is the door's child. BullMQ (and the engines to come)
      // hand a worker one entry at a time, so the parent is exact, not a batch's guess; the span the
      // worker itself runs under, if any, is kept as a link.
      parent = withRemoteParent(active, door);
      const around = trace.getSpanContext(active);
      if (around !== undefined && trace.isSpanContextValid(around)) links.push({ context: around });
    } else if (door !== undefined) {
      // A replay is an operator's act, later: a trace of its own, linked to the delivery it replays.
      links.push({ context: door });
    }
    const tracer = this.#currentTracer();
    const span = tracer.startSpan(
      'webhook.inbox.run',
      {
        kind: SpanKind.CONSUMER,
        links,
        attributes: {
          [ATTRIBUTES.attempt]: attempt,
          ...(replayId === undefined ? {} : { [ATTRIBUTES.replayId]: replayId }),
        },
      },
      parent,
    );
    if (!this.#metering && !span.isRecording()) return undefined;
    return new DeliverySpan(tracer, instruments, span, parent, true);
  }

  deadLettered(eventType: string | undefined): void {
    (this.#instruments ?? this.#firstUse()).inboxRuns.add(1, {
      [ATTRIBUTES.outcome]: 'dead_lettered',
      [ATTRIBUTES.eventType]: boundedEventType(eventType),
    });
  }

  throttled(queue: string, reason: ThrottleReason): void {
    // The queue and the reason only: both bounded; an entry's id or key never goes into a metric.
    (this.#instruments ?? this.#firstUse()).inboxThrottled.add(1, {
      [ATTRIBUTES.queue]: queue,
      [ATTRIBUTES.throttleReason]: reason,
    });
  }

  observeInbox(read: () => Promise<InboxGauges>): () => void {
    this.#instruments ?? this.#firstUse();
    const meter = this.#meter!;
    const depth = meter.createObservableGauge('webhook.inbox.depth', {
      description: 'Inbox entries waiting or being run.',
      unit: '{entry}',
    });
    const oldestAge = meter.createObservableGauge('webhook.inbox.oldest_age', {
      description: 'How long the oldest waiting inbox entry has waited.',
      unit: 's',
    });
    const deadLetters = meter.createObservableGauge('webhook.inbox.dead_letters', {
      description: 'Inbox entries kept as dead letters.',
      unit: '{entry}',
    });
    const observables: Observable[] = [depth, oldestAge, deadLetters];
    let reading: Promise<InboxGauges> | undefined;
    const callback: BatchObservableCallback = async (result) => {
      // One read at a time: the collections of an outage share the read that waits, rather than pile up.
      reading ??= Promise.resolve()
        .then(read)
        .finally(() => {
          reading = undefined;
        });
      // Given up, the SDK reports the rejection as a collection error and exports the rest.
      const gauges = await withDeadline(reading, this.#gaugeDeadlines, 'service-webhooks: the inbox gauges');
      const attributes = { [ATTRIBUTES.queue]: gauges.queue };
      result.observe(depth, gauges.depth, attributes);
      result.observe(oldestAge, gauges.oldestAgeSeconds, attributes);
      result.observe(deadLetters, gauges.deadLetters, attributes);
    };
    meter.addBatchObservableCallback(callback, observables);
    return () => meter.removeBatchObservableCallback(callback, observables);
  }

  #firstUse(): Instruments {
    if (!this.#checked) {
      this.#checked = true;
      // The SDK may have started after openTelemetry() was called: said once, never thrown at a delivery.
      const unseen = unseenGlobals(this.#usesGlobals);
      if (unseen) console.warn(`[service-webhooks] ${unseen}`);
    }
    this.#meter = (this.#meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE_NAME, VERSION);
    this.#metering = !(this.#meter instanceof NOOP_METER);
    this.#instruments = createInstruments(this.#meter);
    return this.#instruments;
  }
}

/**
 * Traces and metrics of every delivery, with OpenTelemetry: pass it as `createWebhooks`'s `telemetry`.
 * Each delivery is a span (`webhook.delivery`), a child of the active context (the HTTP server's span
 * under `@opentelemetry/instrumentation-http`, the invocation's in Lambda), and the handlers run inside
 * it; a worker's run of an inbox entry (`webhook.inbox.run`) is the door's child, through the
 * `traceparent` the door writes into the entry. Metrics: `webhook.deliveries`,
 * `webhook.delivery.duration`, `webhook.handler.duration`, `webhook.lease.lost`, `webhook.inbox.runs`,
 * and an inbox engine's gauges. `@opentelemetry/api` is the app's own (an optional peer dependency).
 *
 * Throws a `ConfigurationError` when the SDK was registered with an `@opentelemetry/api` this copy
 * cannot read, which would otherwise record nothing without a word.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { openTelemetry } from 'service-webhooks/opentelemetry';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, telemetry: openTelemetry() });
 * // or, with providers of your own: openTelemetry({ tracerProvider, meterProvider })
 * ```
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): WebhookTelemetry {
  return new OpenTelemetryPlugin(options);
}
