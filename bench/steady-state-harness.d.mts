/** Write the steady-state copy of the shared core harness at `harness` and return its path. */
export function steadyStateHarness(harness: string): string;
