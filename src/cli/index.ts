/**
 * The command-line module of service-webhooks: the `send`, `replay`, `sandbox` and `deliveries`
 * commands, for tests and scripts that want to run them in-process. Not part of the package root:
 * users reach it through the `service-webhooks` bin. The emulator behind `sandbox` is `src/sandbox/`.
 *
 * @example
 * ```ts
 * import { run } from '../src/cli/index.js';
 *
 * const lines: string[] = [];
 * const code = await run(['send', '--help'], { out: (line) => lines.push(line), err: (line) => lines.push(line) });
 * ```
 * @packageDocumentation
 */
export type { Io } from './args.js';
export { run } from './run.js';
