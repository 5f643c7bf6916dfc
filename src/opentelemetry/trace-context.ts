import { type Context, type SpanContext, TraceFlags, trace } from '@opentelemetry/api';

/** W3C Trace Context, version 00: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ALL_ZERO_TRACE = '0'.repeat(32);
const ALL_ZERO_SPAN = '0'.repeat(16);

/**
 * The `traceparent` of a span context, written by the library itself rather than by the app's
 * registered propagator: the inbox door must carry the trace whether or not the app set a global
 * propagator, and an engine stores the string as it is.
 */
export function formatTraceparent(spanContext: SpanContext): string | undefined {
  if (!trace.isSpanContextValid(spanContext)) return undefined;
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/**
 * The remote span context a `traceparent` names, or `undefined` for one that is missing or malformed
 * (an entry written by hand or by an older door): a trace is never a reason to refuse a run.
 */
export function parseTraceparent(traceparent: string | undefined): SpanContext | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const match = TRACEPARENT.exec(traceparent);
  if (!match) return undefined;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  if (traceId === ALL_ZERO_TRACE || spanId === ALL_ZERO_SPAN) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** `parent` with the remote span context as its active span. */
export function withRemoteParent(parent: Context, spanContext: SpanContext): Context {
  return trace.setSpanContext(parent, spanContext);
}
