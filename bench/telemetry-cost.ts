/**
 * Section 1e: what the `telemetry` option adds to a delivery (issue 31), as a server pays it (the
 * method of section 1c: CPU time, fresh fixtures and receiver per segment, event-loop turns), side by
 * side with the same receiver without it, A-B-B-A within each round.
 *
 * Two processes, since OpenTelemetry's providers are global:
 * - `api`: `telemetry: openTelemetry()` with @opentelemetry/api alone, no SDK registered: an app that
 *   ships the option but has not set up (or has turned off) OpenTelemetry. Target: at most +0.3 µs.
 * - `sdk`: the real SDK registered as an app does (AsyncLocalStorage context, every span sampled and
 *   batched to an exporter that drops it, a meter provider aggregating the instruments): the whole
 *   cost of a span, its context, and three metric records per delivery. Reported.
 *
 * Run alone: `npx tsx --tsconfig bench/tsconfig.json bench/telemetry-cost.ts api` after `npm run build`.
 */
import { pathToFileURL } from 'node:url';
import { type Library, SERVER_COST_SHAPES, sideBySide, type Variant } from './server-cost.js';
import { median, QUICK, SECRET } from './shared.js';

const ROUNDS = QUICK ? 2 : 9;
const SHAPE = SERVER_COST_SHAPES[0];

export type TelemetryMode = 'api' | 'sdk';

export interface TelemetryCostRow {
  readonly mode: TelemetryMode;
  /** Median over rounds of (with telemetry − without), CPU µs per delivery. */
  readonly addedMicros: number;
  /** Median over rounds of with / without. */
  readonly ratio: number;
  readonly withoutMicros: number;
  readonly withMicros: number;
  readonly rounds: number;
}

/** The SDK as an app registers it; what leaves the process is the exporter's cost, so spans are dropped. */
async function registerSdk(): Promise<void> {
  const { context, metrics, trace } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics');
  class OnDemandReader extends MetricReader {
    protected override async onForceFlush(): Promise<void> {}
    protected override async onShutdown(): Promise<void> {}
  }
  const dropped = {
    export: (_spans: unknown, done: (result: { code: 0 }) => void) => done({ code: 0 }),
    shutdown: async () => {},
  };
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropped)] }),
  );
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new OnDemandReader()] }));
}

function receiverVariant(
  library: Library,
  telemetry: (() => ReturnType<typeof import('service-webhooks/opentelemetry').openTelemetry>) | undefined,
): Variant {
  return () => {
    const webhooks = library.createWebhooks({
      secret: SECRET,
      store: new library.MemoryStore(),
      ...(telemetry ? { telemetry: telemetry() } : {}),
    });
    webhooks.on('user.created', async () => {});
    return async (fixture) =>
      (await webhooks.handle({ body: fixture.body, headers: fixture.headers })).status;
  };
}

export async function runTelemetryCost(
  mode: TelemetryMode,
  log: (line: string) => void,
): Promise<TelemetryCostRow> {
  if (mode === 'sdk') await registerSdk();
  const library = (await import('service-webhooks')) as Library;
  const { openTelemetry } = await import('service-webhooks/opentelemetry');
  const variants: [string, Variant][] = [
    ['without', receiverVariant(library, undefined)],
    ['with', receiverVariant(library, () => openTelemetry())],
  ];
  const samples = await sideBySide(variants, SHAPE, ROUNDS);
  const without = samples.get('without')!;
  const withTelemetry = samples.get('with')!;
  const row: TelemetryCostRow = {
    mode,
    addedMicros: median(withTelemetry.map((value, i) => value - without[i]!)),
    ratio: median(withTelemetry.map((value, i) => value / without[i]!)),
    withoutMicros: median(without),
    withMicros: median(withTelemetry),
    rounds: ROUNDS,
  };
  log(
    `  ${mode === 'api' ? 'API alone, no SDK' : 'the SDK registered'}: ${row.addedMicros >= 0 ? '+' : ''}${row.addedMicros.toFixed(2)} CPU µs per delivery (${row.withMicros.toFixed(2)} vs ${row.withoutMicros.toFixed(2)} µs, ${row.ratio.toFixed(3)}×), ${SHAPE}`,
  );
  return row;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const mode = (process.argv.find((arg) => arg === 'api' || arg === 'sdk') ?? 'api') as TelemetryMode;
  const json = process.argv.includes('--json');
  const row = await runTelemetryCost(mode, (line) => (json ? console.error(line) : console.log(line)));
  if (json) console.log(JSON.stringify(row));
}
