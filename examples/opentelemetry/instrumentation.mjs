// Starts OpenTelemetry before the app loads: run the app as
//   node --import ./instrumentation.mjs server.mjs
// The HTTP instrumentation patches node:http as it loads. An ES module's `import 'node:http'` loads it
// before any line of the app runs, and not through require(): only the loader hook registered here,
// first, lets the instrumentation see it. Set up from the app itself, it patches nothing.
import { register } from 'node:module';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { ConsoleSpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';

// The ESM loader hook: without it, only modules loaded with require() can be instrumented.
register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);

// Spans go to stdout here; in production, a BatchSpanProcessor with an OTLP exporter.
const tracerProvider = new NodeTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())],
});
tracerProvider.register(); // also the AsyncLocalStorage context that makes the delivery the request's child

// Serves /metrics on its own port, 9464 unless OTEL_EXPORTER_PROMETHEUS_PORT says otherwise.
const prometheus = new PrometheusExporter({}, (error) => {
  if (error) throw error;
  console.log(`Metrics on http://localhost:${process.env.OTEL_EXPORTER_PROMETHEUS_PORT ?? 9464}/metrics`);
});
const meterProvider = new MeterProvider({ readers: [prometheus] });
metrics.setGlobalMeterProvider(meterProvider);

registerInstrumentations({
  // Every scrape would otherwise be a trace of its own.
  instrumentations: [
    new HttpInstrumentation({ ignoreIncomingRequestHook: (request) => request.url === '/metrics' }),
  ],
});

// Buffered spans and metrics are flushed when the platform stops the process.
process.once('SIGTERM', () => void Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]));
