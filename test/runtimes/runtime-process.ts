/**
 * Start a non-Node runtime (Bun, Deno) as its own process on an example receiver, and read runtime
 * versions for the test names. The runtimes are not root devDependencies but the side install of
 * scripts/side-installs/runtimes/ (test/support/runtimes.ts says why), which the package tier's globalSetup
 * installs: their binaries live in its node_modules/.bin, so CI needs nothing but `npm install`.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { assertBuilt as assertDist, ROOT } from '../support/paths.js';
import { captureOutput as capture, startProcess } from '../support/process.js';
import { runtimeBinPath } from '../support/runtimes.js';
import type { RuntimeReceiver } from './runtime-cases.js';

export { ROOT };
export const SECRET = 'whsec_runtime_cases';

/** The absolute path of a binary in the side install's node_modules/.bin. */
export const binary = runtimeBinPath;

/** `dist/` must exist: the runtimes import the built package, as users do. */
export function assertBuilt(): void {
  assertDist('web.js');
}

/** The binary's path, or an error that says what is missing. */
function installed(name: string): string {
  const path = binary(name);
  if (!existsSync(path)) {
    throw new Error(
      `${name} is not installed (${path} is missing): run \`npx tsx test/support/runtimes.ts\`, or run this test in its tier (\`npx vitest run --project package\`), whose globalSetup installs it.`,
    );
  }
  return path;
}

/**
 * Run a binary and return its stdout, or throw an error that says what is missing: a runtime that
 * cannot run fails its tests with this message, never skips them.
 */
export async function run(
  name: string,
  args: string[],
  cwd = ROOT,
  env: Record<string, string> = {},
): Promise<string> {
  const path = installed(name);
  try {
    const { stdout } = await promisify(execFile)(path, args, {
      cwd,
      env: { ...process.env, ...env },
      timeout: 30_000,
    });
    return stdout;
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`\`${name} ${args.join(' ')}\` failed: ${stderr || message}`);
  }
}

/** A version for a test name; a runtime that cannot run reports why, and its tests fail in `start`. */
export async function versionOf(read: () => Promise<string>): Promise<string> {
  try {
    return await read();
  } catch {
    return 'NOT RUNNABLE';
  }
}

/**
 * Start `name args` in `cwd` with PORT=0, wait for the line `Listening on http://host:port/webhooks`,
 * and keep every line it prints (the handlers log one line per event they ran).
 */
export async function startServer(
  name: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<RuntimeReceiver> {
  assertBuilt();
  const server = await startProcess(installed(name), args, {
    name,
    cwd,
    env: { ...env, PORT: '0', WEBHOOK_SECRET: SECRET },
    ready: /Listening on http:\/\/\S+:(\d+)\/webhooks/,
    timeoutMs: 15_000,
  });
  return {
    output: server.output,
    describe: server.describe,
    onOutput: server.onOutput,
    close: () => server.stop(),
    url: `http://127.0.0.1:${server.match[1]}/webhooks`,
  };
}

export type Output = Omit<RuntimeReceiver, 'url'>;

/** Keep what a runtime prints (workerd's streams, from Miniflare); `onOutput` listeners run on each stdout chunk. */
export function captureOutput(stdout: Readable, stderr: Readable, close: () => Promise<void>): Output {
  const { output, describe, onOutput } = capture(stdout, stderr);
  return { output, describe, onOutput, close };
}
