/**
 * The checks every engine's worker (and the SQS Lambda handler) runs on its options at the start, so
 * that a mistake is one clear `ConfigurationError` in the same words on every engine.
 */
import { ConfigurationError, type InboxMonitorOptions, type Webhooks } from 'service-webhooks/core';

/** `value` when it is a whole number from `min` to `max`, `fallback` when it is not given. */
export function wholeOption(
  what: string,
  name: string,
  value: number | undefined,
  fallback: number,
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    throw new ConfigurationError(
      `${what} \`${name}\` must be a whole number ${range}; got ${String(value)}.`,
    );
  }
  return value;
}

/** The `acceptUnsealedEntries` option: true or false, `false` when not given. */
export function acceptUnsealedOption(what: string, value: boolean | undefined): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean')
    throw new ConfigurationError(
      `${what} \`acceptUnsealedEntries\` must be true or false; got ${String(value)}.`,
    );
  return value;
}

/** A worker runs `webhooks.process`: refuse anything else before connecting to a queue. */
export function checkReceiver(webhooks: Webhooks, what: string): void {
  if (typeof webhooks?.process !== 'function') {
    throw new ConfigurationError(
      `${what} needs the receiver made by createWebhooks() as its first argument.`,
    );
  }
}

/** The `monitor` option with its defaults; `undefined` for `monitor: false`. */
export function monitorSettings(
  what: string,
  monitor: InboxMonitorOptions | false | undefined,
): Required<InboxMonitorOptions> | undefined {
  if (monitor === false) return undefined;
  const options = monitor ?? {};
  return {
    intervalMs: wholeOption(what, 'monitor.intervalMs', options.intervalMs, 60_000),
    maxDepth: wholeOption(what, 'monitor.maxDepth', options.maxDepth, Number.MAX_SAFE_INTEGER, 0),
    maxWaitMs: wholeOption(what, 'monitor.maxWaitMs', options.maxWaitMs, 600_000, 0),
  };
}
