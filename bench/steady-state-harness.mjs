// The shared core harness (../shared/bench/core-cost.mjs) as a server would see it: the same file with
// each segment's receiver kept alive to the end of the run.
//
// Why: the harness makes a fresh receiver (and floor) per segment and collects the heap between
// segments, so the receivers before are gone. V8 then discards the optimized code that depended on
// them (the hidden classes of their objects die with them, and so do functions made per receiver) and
// compiles the delivery path again on its background threads, which counts as the process's CPU time:
// `--trace-opt` shows the core's hot functions compiled once per segment. A server keeps its one
// receiver. The copy is an experiment beside the harness, never a replacement for it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MADE = '  const w = createWebhooks({ secret: SECRET });\n';
const KEPT = `${MADE}  (globalThis.keptReceivers ??= []).push(w);\n`;

/** Write the steady-state copy of the harness at `harness` and return its path. */
export function steadyStateHarness(harness) {
  const code = readFileSync(harness, 'utf8');
  if (!code.includes(MADE))
    throw new Error(`The harness no longer makes its receiver as expected: ${harness}`);
  const dir = join(tmpdir(), 'service-webhooks-steady-state');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'core-cost-receivers-kept.mjs');
  writeFileSync(file, code.replace(MADE, KEPT));
  return file;
}

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
 * registered (see SDK_SETUP). Each receiver is kept alive as in {@link steadyStateHarness}, so the
 * copies compare with that one: the difference is what telemetry adds to a delivery.
 */
export function telemetryHarness(harness, mode) {
  const code = readFileSync(harness, 'utf8');
  if (!code.includes(MADE) || !code.includes(LOADED))
    throw new Error(`The harness no longer makes or loads its receiver as expected: ${harness}`);
  const load = `${LOADED}const { openTelemetry } = await import(pathToFileURL(join(PROJECT, 'dist', 'opentelemetry.js')).href);\n${mode === 'sdk' ? SDK_SETUP : ''}`;
  const made = `  const w = createWebhooks({ secret: SECRET, telemetry: openTelemetry() });\n  (globalThis.keptReceivers ??= []).push(w);\n`;
  const dir = join(tmpdir(), 'service-webhooks-steady-state');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `core-cost-telemetry-${mode}.mjs`);
  writeFileSync(file, code.replace(LOADED, load).replace(MADE, made));
  return file;
}
