/**
 * Where the SIGKILL and multi-process workers keep the ids of the events whose handler completed at
 * least once: a Redis set beside the list of runs. A test that waits for "every event handled" counts
 * this set, never the list: the list also holds the crash window's second runs, so its length reaches
 * the number of events while one event may still be on its way (held by a worker, or in a prefetch
 * that a queue's figures do not count), and the verdict that follows would call that event lost.
 */
export function handledEventsKey(logKey: string): string {
  return `${logKey}:events`;
}
