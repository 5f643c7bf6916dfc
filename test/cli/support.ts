/** Processes and HTTP helpers shared by the CLI tests. */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { assertBuilt, distPath, ROOT } from '../support/paths.js';
import { spawnProcess, startProcess } from '../support/process.js';

// The sandbox's HTTP helpers, for the CLI tests that drive a sandbox too.
export { api, waitFor } from '../sandbox/support.js';
export { ROOT };
export const CLI = distPath('cli.js');
const RECEIVER = fileURLToPath(new URL('./fixtures/express-receiver.ts', import.meta.url));
const FAN_OUT_RECEIVER = fileURLToPath(new URL('./fixtures/fan-out-receiver.ts', import.meta.url));

/** The tests run the built bin, as users do; the package tier builds it first. */
export function requireBuiltCli(): void {
  assertBuilt('cli.js');
}

/** A child process whose output is collected. */
export interface Child {
  readonly child: ChildProcess;
  /** stdout and stderr together, as printed. */
  output(): string;
  stop(): Promise<void>;
}

async function startChild(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<Child & { match: RegExpMatchArray }> {
  const started = await startProcess(process.execPath, args, {
    name: args.join(' '),
    cwd: ROOT,
    env,
    ready,
    timeoutMs: 30_000,
  });
  return { child: started.child, output: started.combined, stop: () => started.stop(), match: started.match };
}

/** `service-webhooks sandbox` on a free port, with extra environment `env`; `url` ends in /v1. */
export async function startSandboxProcess(
  args: string[],
  env: Record<string, string> = {},
): Promise<Child & { url: string }> {
  const started = await startChild(
    [CLI, 'sandbox', '--port', '0', ...args],
    env,
    /listening on (http:\S+\/v1)/,
  );
  return { ...started, url: started.match[1]! };
}

/** The Express receiver fixture; `url` has no trailing slash. */
export async function startReceiverProcess(secret: string): Promise<Child & { url: string }> {
  const started = await startChild(['--import', 'tsx', RECEIVER], { SECRET: secret }, /\{"port":(\d+)\}/);
  return { ...started, url: `http://127.0.0.1:${started.match[1]}` };
}

/** The fan-out receiver fixture (two registrations, one RedisStore); `url` has no trailing slash. */
export async function startFanOutReceiverProcess(
  env: Record<string, string>,
): Promise<Child & { url: string }> {
  const started = await startChild(['--import', 'tsx', FAN_OUT_RECEIVER], env, /\{"port":(\d+)\}/);
  return { ...started, url: `http://127.0.0.1:${started.match[1]}` };
}

/** Run the CLI to completion. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = spawnProcess(process.execPath, [CLI, ...args], {
    name: `service-webhooks ${args.join(' ')}`,
    cwd: ROOT,
    env,
  });
  await run.exited;
  return { code: run.child.exitCode, stdout: run.output(), stderr: run.stderr() };
}
