/**
 * The real OpenTelemetry JS SDK (2.x) for the telemetry tests: a tracer provider whose spans go to an
 * in-memory exporter, a meter provider read on demand, and the AsyncLocalStorage context manager that
 * a Node app registers (NodeSDK does the same). Nothing here is a mock: the plug-in records through
 * the SDK exactly as in production, and the tests read what the SDK would export.
 */
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  type DataPoint,
  type ExponentialHistogram,
  type Histogram,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** A reader the test collects from when it wants, rather than on an export interval. */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export interface OpenTelemetryHarness {
  readonly tracerProvider: BasicTracerProvider;
  readonly meterProvider: MeterProvider;
  readonly exporter: InMemorySpanExporter;
  /** Ended spans, in the order they ended. */
  spans(): ReadableSpan[];
  /** The one ended span of this name (fails the test if there are none or several). */
  span(name: string): ReadableSpan;
  /** Read the metrics now: `points` and `count` answer from the last collection. */
  collect(): Promise<void>;
  /** The data points of one metric at the last collection (none if it was never recorded). */
  points(name: string): DataPoint<number | Histogram | ExponentialHistogram>[];
  /** The sum of a counter's points whose attributes include `where`. */
  count(name: string, where?: Record<string, string | number>): number;
  /** Undo the global registration (tracer, meter, context manager) and shut the providers down. */
  shutdown(): Promise<void>;
}

/**
 * Start the SDK. `register: true` sets the global providers, as `NodeSDK.start()` does, for the
 * plug-in's defaults; otherwise only the context manager is global and the test passes the providers.
 */
export function startOpenTelemetry(options: { register?: boolean } = {}): OpenTelemetryHarness {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  if (options.register) {
    trace.setGlobalTracerProvider(tracerProvider);
    metrics.setGlobalMeterProvider(meterProvider);
  }
  const collect = async () => (await reader.collect()).resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
  let latest: Awaited<ReturnType<typeof collect>> = [];
  const harness: OpenTelemetryHarness = {
    tracerProvider,
    meterProvider,
    exporter,
    spans: () => exporter.getFinishedSpans(),
    span(name) {
      const found = exporter.getFinishedSpans().filter((span) => span.name === name);
      if (found.length !== 1) throw new Error(`expected one span named ${name}, found ${found.length}`);
      return found[0]!;
    },
    points: (name) => latest.find((metric) => metric.descriptor.name === name)?.dataPoints ?? [],
    count(name, where = {}) {
      return harness
        .points(name)
        .filter((point) => Object.entries(where).every(([key, value]) => point.attributes[key] === value))
        .reduce((sum, point) => sum + (point.value as number), 0);
    },
    async collect() {
      latest = await collect();
    },
    async shutdown() {
      trace.disable();
      metrics.disable();
      context.disable();
      contextManager.disable();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
  return harness;
}
