// A node:http receiver with traces, metrics and logs that join them. Run:
//   WEBHOOK_SECRET=... node --import ./instrumentation.mjs server.mjs
import { createServer } from 'node:http';
import { trace } from '@opentelemetry/api';
import pino from 'pino';
import { createWebhooks } from 'service-webhooks';
import { nodeHandler } from 'service-webhooks/node';
import { openTelemetry } from 'service-webhooks/opentelemetry';

const logger = pino({
  // Lines a handler logs join its trace too; the receiver's own record of each delivery already does.
  mixin() {
    const span = trace.getActiveSpan()?.spanContext();
    return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
  },
});

const webhooks = createWebhooks({
  secret: process.env.WEBHOOK_SECRET,
  logger,
  telemetry: openTelemetry(), // the providers instrumentation.mjs registered
});
webhooks.on('user.created', (event) => {
  logger.info({ email: event.data.email }, 'welcome mail queued');
});
webhooks.on('payment.succeeded', (event) => {
  logger.info({ payment: event.data.id }, 'payment recorded');
});

const server = createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, nodeHandler(webhooks));
server.listen(Number(process.env.PORT ?? 3000), () => {
  console.log(`Listening on http://localhost:${server.address().port}/webhooks`);
});
// instrumentation.mjs listens for SIGTERM too, so Node no longer exits on it by itself: once the
// server is closed and its last answer sent, the process ends.
process.once('SIGTERM', () => server.close());
