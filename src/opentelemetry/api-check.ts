import { context, metrics, trace } from '@opentelemetry/api';

/** Where every copy of `@opentelemetry/api` 1.x looks for what the SDK registered. */
const GLOBAL_KEY = Symbol.for('opentelemetry.js.api.1');

/** What the SDK registered with `@opentelemetry/api` 1.x, whichever copy of it did. */
export interface RegisteredGlobals {
  readonly version?: string;
  readonly trace?: unknown;
  readonly metrics?: unknown;
  readonly context?: unknown;
}

/** The globals the SDK registered, or `undefined` when none is. */
export function registeredGlobals(): RegisteredGlobals | undefined {
  return (globalThis as { [GLOBAL_KEY]?: RegisteredGlobals })[GLOBAL_KEY];
}

/** What the plug-in takes from the globals: whatever the app did not pass itself. */
export interface GlobalsUsed {
  readonly tracerProvider: boolean;
  readonly meterProvider: boolean;
}

/**
 * Why this copy of `@opentelemetry/api` cannot see what the SDK registered, or `undefined` when it can
 * (or nothing is registered yet). By the API's own compatibility rule a copy reads what a copy of its
 * major version with the same or a NEWER minor version registered, and reads an older one's globals
 * as absent, then records nothing without a word: an app whose SDK registers through an older copy
 * than the one this plug-in loads (a distribution or a package that pins its own API, nested under it)
 * hits exactly that. Measured in test/opentelemetry/api-versions.package.test.ts.
 */
export function unseenGlobals(used: GlobalsUsed): string | undefined {
  const registered = registeredGlobals();
  if (registered === undefined) return undefined;
  const unseen: string[] = [];
  if (used.tracerProvider && registered.trace !== undefined && trace.getTracerProvider() !== registered.trace)
    unseen.push('tracer provider');
  if (
    used.meterProvider &&
    registered.metrics !== undefined &&
    metrics.getMeterProvider() !== registered.metrics
  )
    unseen.push('meter provider');
  // Always used: the handlers' spans are the delivery's children only through the context manager.
  const manager = (context as unknown as { _getContextManager?: () => unknown })._getContextManager?.();
  if (registered.context !== undefined && manager !== undefined && manager !== registered.context)
    unseen.push('context manager');
  if (unseen.length === 0) return undefined;
  return `the OpenTelemetry SDK registered its ${unseen.join(', ')} with @opentelemetry/api ${registered.version ?? '(unknown version)'}, and the copy of @opentelemetry/api that service-webhooks/opentelemetry loads cannot read them (a copy reads only what the same or a newer minor version of its major registered), so nothing would be recorded. Install one @opentelemetry/api for the whole app (npm ls @opentelemetry/api shows the copies).`;
}
