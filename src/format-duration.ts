/** Durations in the words the inbox's logs, errors and CLI use. Part of the core: its errors say them. */

/**
 * A duration as people read it, for logs and the CLI: `45 s`, `12 min`, `5.2 h`, `2.4 days`.
 *
 * @example
 * ```ts
 * formatDuration(207_670_000); // '2.4 days'
 * ```
 */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1_000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} days`;
}
