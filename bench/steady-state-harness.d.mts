/** Write the steady-state copy of the shared core harness at `harness` and return its path. */
export function steadyStateHarness(harness: string): string;
/** Write a copy of the harness whose receivers have `telemetry: openTelemetry()` (`api`: no SDK; `sdk`: the real SDK) and return its path. */
export function telemetryHarness(harness: string, mode: 'api' | 'sdk'): string;
