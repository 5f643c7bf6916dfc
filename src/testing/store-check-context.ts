import type { HistoryClock } from './history-clock.js';
import type { PlannedFault } from './store-histories.js';

/**
 * What `checkStore` hands `createStore` for each history. A store may ignore it all; each part it uses
 * lets the checker test more:
 *
 * - `now`: the history's clock in milliseconds. Give it to a store that takes a clock (`new
 *   MemoryStore({ now })`) and pass `clock: 'virtual'`: histories then never wait for real, run in
 *   a few milliseconds each, and replay exactly from their seed.
 * - `fault`: await it around each request your store makes to its backend (before sending, after the
 *   answer, or both). It usually resolves at once; now and then it throws an {@link InjectedStoreFault}
 *   (a backend failure) or resolves only after the call deadline (a backend that is slow). The store
 *   must then fail loudly or answer the truth (rule 8), never guess.
 * - `keyPrefix`: unique to the history, and already at the start of every key the checker uses; for
 *   stores that want a namespace of their own (a table, a key prefix) per history.
 *
 * @example
 * ```ts
 * checkStore({
 *   createStore: ({ fault }) =>
 *     new PostgresStore({
 *       pool: {
 *         query: async (text, values) => {
 *           await fault('query');
 *           const result = await pool.query(text, values);
 *           await fault('reply'); // the statement ran, its answer is lost
 *           return result;
 *         },
 *       },
 *     }),
 * });
 * ```
 */
export interface StoreCheckContext {
  now(): number;
  fault(operation: string): Promise<void>;
  readonly keyPrefix: string;
}

/**
 * The error `StoreCheckContext.fault` throws to simulate a backend failure. A store should let it
 * through (or wrap it, as the built-in stores wrap backend errors in `StoreUnavailableError`).
 *
 * @example
 * ```ts
 * try { await fault('query'); } catch (error) { throw new StoreUnavailableError('backend failed', { cause: error }); }
 * ```
 */
export class InjectedStoreFault extends Error {
  override name = 'InjectedStoreFault';
}

/**
 * The fault hook of one history: the plan's faults, each at its turn; a slow answer parks on the
 * history's clock for `slowMs` (past the call deadline) and then lets the call go on. `onFault` hears of
 * each fault as it is injected.
 *
 * @example
 * ```ts
 * const fault = faultHook([{ at: 1, choice: 'throw' }], clock, 300, () => injected++);
 * ```
 */
export function faultHook(
  faults: readonly PlannedFault[],
  clock: HistoryClock,
  slowMs: number,
  onFault: (choice: PlannedFault['choice'], operation: string) => void,
): (operation: string) => Promise<void> {
  let turn = 0;
  return async (operation) => {
    const at = turn++;
    const choice = faults.find((fault) => fault.at === at)?.choice;
    if (choice === undefined) return;
    onFault(choice, operation);
    if (choice === 'throw') throw new InjectedStoreFault(`injected fault: ${operation} failed`);
    await clock.sleep(slowMs);
  };
}
