/**
 * The checks every engine's worker (and the SQS Lambda handler) runs on its options at the start, so
 * that a mistake is one clear `ConfigurationError` in the same words on every engine.
 */
import {
  type AnyWebhooks,
  ConfigurationError,
  type FlowControl,
  type FlowControlSource,
  INBOX_DEFAULTS,
  type InboxBackoff,
  type InboxFlowOptions,
  type InboxMonitorOptions,
  type Webhooks,
} from 'service-webhooks/core';
import { schedule } from './backoff.js';
import type { FlowSettings } from './flow-gate.js';
import type { RunnerSettings } from './runner.js';
import type { WorkerSettings } from './worker.js';

/** The options every engine's runner takes, under the same names (the SQS Lambda handler's too). */
interface RunnerOptions {
  readonly attempts?: number;
  readonly backoff?: InboxBackoff;
  readonly handlerTimeoutMs?: number;
  readonly acceptUnsealedEntries?: boolean;
}

/** The options every engine's long-running worker takes, under the same names. */
interface WorkerOptions extends RunnerOptions {
  readonly concurrency?: number;
  readonly monitor?: InboxMonitorOptions | false;
}

/**
 * `attempts`, `backoff`, `handlerTimeoutMs` and `acceptUnsealedEntries` checked and with their
 * defaults, the same on every engine: one place, so that no engine drifts from the others.
 *
 * @example
 * ```ts
 * const settings = runnerSettings('sqsHandler()', { attempts: 20 });
 * ```
 */
export function runnerSettings(what: string, options: RunnerOptions): RunnerSettings {
  return {
    attempts: wholeOption(what, 'attempts', options.attempts, INBOX_DEFAULTS.attempts),
    retries: schedule(options.backoff, what),
    handlerTimeoutMs:
      options.handlerTimeoutMs === undefined
        ? undefined
        : wholeOption(what, 'handlerTimeoutMs', options.handlerTimeoutMs, 0),
    acceptUnsealedEntries: acceptUnsealedOption(what, options.acceptUnsealedEntries),
  };
}

/**
 * {@link runnerSettings} and a worker's `concurrency` (default 10, at most `maxConcurrency`: an
 * engine whose prefetch has a ceiling says so) and `monitor`; the engine adds its own settings and
 * its `flow` (see {@link flowSettings}).
 *
 * @example
 * ```ts
 * const settings = { ...workerSettings('startNatsWorker()', options), flow: flowSettings(WHAT, stream, options, undefined) };
 * ```
 */
export function workerSettings(
  what: string,
  options: WorkerOptions,
  maxConcurrency = Number.MAX_SAFE_INTEGER,
): WorkerSettings {
  return {
    concurrency: wholeOption(what, 'concurrency', options.concurrency, 10, 1, maxConcurrency),
    ...runnerSettings(what, options),
    monitor: monitorSettings(what, options.monitor),
  };
}

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

/**
 * A worker runs `webhooks.process`: refuse anything else before connecting to a queue. Any receiver
 * will do, one with `tenant` too (its entries carry their tenant); past this check the worker treats
 * them alike, through `process` and `sealAttempt`, whose types do not depend on the tenant.
 */
export function checkReceiver(webhooks: AnyWebhooks, what: string): asserts webhooks is Webhooks {
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

/**
 * The flow-control options (`rate`, `concurrencyPerKey`, `flowControl`, `holdMs`), checked alike on
 * every engine. `engineBackend` makes the engine's own shared state (BullMQ: its Redis; pg-boss: its
 * database), used unless `flowControl` names another; an engine without one (SQS) passes none, and
 * then `rate` or `concurrencyPerKey` without `flowControl` is refused. `undefined`: no flow control.
 */
export function flowSettings(
  what: string,
  queue: string,
  options: InboxFlowOptions,
  engineBackend: (() => FlowControl) | undefined,
): FlowSettings | undefined {
  const { rate, concurrencyPerKey } = options;
  if (rate === undefined && concurrencyPerKey === undefined) return undefined;
  const holdMs = wholeOption(what, 'holdMs', options.holdMs, 2_000, 0);
  let checkedRate: FlowSettings['rate'];
  if (rate !== undefined) {
    if (typeof rate !== 'object' || rate === null)
      throw new ConfigurationError(`${what} \`rate\` must be { max, perMs }; got ${String(rate)}.`);
    const max = requiredWhole(what, 'rate.max', rate.max);
    const perMs = requiredWhole(what, 'rate.perMs', rate.perMs);
    const marginMs = wholeOption(
      what,
      'rate.marginMs',
      rate.marginMs,
      Math.min(1_000, Math.max(100, Math.round(perMs * 0.02))),
      0,
    );
    checkedRate = { max, perMs, marginMs };
  }
  let perKey: FlowSettings['perKey'];
  if (concurrencyPerKey !== undefined) {
    if (typeof concurrencyPerKey?.key !== 'function')
      throw new ConfigurationError(
        `${what} \`concurrencyPerKey\` must be { key: (entry) => string, max }; its \`key\` is not a function.`,
      );
    perKey = {
      key: concurrencyPerKey.key,
      max: requiredWhole(what, 'concurrencyPerKey.max', concurrencyPerKey.max),
      leaseMs: wholeOption(what, 'concurrencyPerKey.leaseMs', concurrencyPerKey.leaseMs, 30_000, 300),
    };
  }
  const backend = flowBackend(what, options.flowControl) ?? engineBackend?.();
  if (backend === undefined) {
    throw new ConfigurationError(
      `${what} \`rate\` and \`concurrencyPerKey\` keep their state where every worker sees it, and this engine has no such backend of its own: pass \`flowControl\` (your RedisStore or PostgresStore, or a RedisFlowControl / PostgresFlowControl).`,
    );
  }
  return { backend, queue, rate: checkedRate, perKey, holdMs };
}

function flowBackend(what: string, given: InboxFlowOptions['flowControl']): FlowControl | undefined {
  if (given === undefined) return undefined;
  if (typeof (given as FlowControl).acquireRate === 'function') return given as FlowControl;
  if (typeof (given as FlowControlSource).flowControl === 'function')
    return (given as FlowControlSource).flowControl();
  throw new ConfigurationError(
    `${what} \`flowControl\` must be a RedisFlowControl or PostgresFlowControl, or a RedisStore or PostgresStore.`,
  );
}

/** A whole number ≥ 1 that has no default. */
function requiredWhole(what: string, name: string, value: number | undefined): number {
  if (value === undefined)
    throw new ConfigurationError(`${what} \`${name}\` is required: a whole number ≥ 1.`);
  return wholeOption(what, name, value, 1);
}
