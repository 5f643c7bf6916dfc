/** Write a copy of the shared core harness whose receiver has `telemetry: openTelemetry()` (`api`: no SDK; `sdk`: the real SDK) and return its path. */
export function telemetryHarness(harness: string, mode: 'api' | 'sdk'): string;
