/**
 * The core's clock: monotonic milliseconds, for deadlines, leases and logged durations. Only
 * differences between two readings mean anything; the origin is the runtime's.
 *
 * `process.hrtime` where the runtime has it (Node, Bun), else `performance.now()` (edge runtimes,
 * Deno without Node compatibility). On Node the global `performance` is made on first use by loading
 * perf_hooks (eleven internal modules, about 0.5 ms): a Lambda's first delivery paid that for one
 * reading. `hrtime` is there from the start and costs no more per reading.
 *
 * @example
 * ```ts
 * const started = now();
 * await work();
 * const tookMs = now() - started;
 * ```
 */
export const now: () => number = hrtimeClock() ?? (() => performance.now());

interface HrtimeProcess {
  hrtime(): [number, number];
}

function hrtimeClock(): (() => number) | undefined {
  // Read through globalThis, as node-builtins.ts reads getBuiltinModule: Next.js's Edge sandbox gives a
  // `process` whose Node.js functions throw when called, so one reading here tells a working hrtime.
  try {
    const runtime = (globalThis as { process?: Partial<HrtimeProcess> }).process;
    if (typeof runtime?.hrtime !== 'function') return undefined;
    const clock = runtime as HrtimeProcess;
    clock.hrtime();
    return () => {
      const time = clock.hrtime();
      return time[0] * 1000 + time[1] / 1e6;
    };
  } catch {
    return undefined;
  }
}
