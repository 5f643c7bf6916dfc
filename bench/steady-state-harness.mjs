// Copies of the shared core harness (../shared/bench/core-cost.mjs) with the receiver made another way,
// for what an option adds to a delivery as the harness measures it. The harness itself keeps one receiver
// and one floor for the whole run, as a server keeps its receiver; each copy changes only how that one
// receiver is made, and keeps nothing else alive (no static that retains a receiver: that reads as a gain
// and is a leak). The copies are experiments beside the harness, never a replacement for it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MADE = '  const w = createWebhooks({ secret: SECRET });\n';

const LOADED =
  "const { createWebhooks } = await import(pathToFileURL(join(PROJECT, 'dist', 'index.js')).href);\n";

/**
 * The OpenTelemetry SDK as an app registers it, for the `sdk` copy: spans sampled and batched to an
 * exporter that drops them (what leaves the process is the exporter's cost, not the library's), and a
 * meter provider whose reader collects only when asked, so the instruments aggregate as in production.
 */
const SDK_SETUP = `
const otelApi = projectRequire('@opentelemetry/api');
const { BasicTracerProvider, BatchSpanProcessor } = projectRequire('@opentelemetry/sdk-trace-base');
const { MeterProvider, MetricReader } = projectRequire('@opentelemetry/sdk-metrics');
const { AsyncLocalStorageContextManager } = projectRequire('@opentelemetry/context-async-hooks');
const dropped = { export: (spans, done) => done({ code: 0 }), shutdown: async () => {} };
class OnDemandReader extends MetricReader { async onForceFlush() {} async onShutdown() {} }
otelApi.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
otelApi.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropped)] }));
otelApi.metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new OnDemandReader()] }));
`;

/**
 * A copy of the harness whose receiver has `telemetry: openTelemetry()`: `api` with the
 * @opentelemetry/api alone (no SDK registered: every call is the API's no-op), `sdk` with the real SDK
 * registered (see SDK_SETUP). Compared with the harness's own figure, the difference is what telemetry
 * adds to a delivery.
 */
export function telemetryHarness(harness, mode) {
  const code = readFileSync(harness, 'utf8');
  if (!code.includes(MADE) || !code.includes(LOADED))
    throw new Error(`The harness no longer makes or loads its receiver as expected: ${harness}`);
  const load = `${LOADED}const { openTelemetry } = await import(pathToFileURL(join(PROJECT, 'dist', 'opentelemetry.js')).href);\n${mode === 'sdk' ? SDK_SETUP : ''}`;
  const made = '  const w = createWebhooks({ secret: SECRET, telemetry: openTelemetry() });\n';
  const dir = join(tmpdir(), 'service-webhooks-steady-state');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `core-cost-telemetry-${mode}.mjs`);
  writeFileSync(file, code.replace(LOADED, load).replace(MADE, made));
  return file;
}
