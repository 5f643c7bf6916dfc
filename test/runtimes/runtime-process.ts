/**
 * Start a non-Node runtime (Bun, Deno) as its own process on an example receiver, and read runtime
 * versions for the test names. The runtimes are devDependencies: their binaries live in
 * node_modules/.bin, so CI needs nothing but `npm ci`.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { RuntimeReceiver } from './runtime-cases.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SECRET = 'whsec_runtime_cases';

/** The absolute path of a binary in node_modules/.bin. */
export function binary(name: string): string {
  return fileURLToPath(new URL(`../../node_modules/.bin/${name}`, import.meta.url));
}

/** `dist/` must exist: the runtimes import the built package, as users do. */
export function assertBuilt(): void {
  if (!existsSync(new URL('../../dist/web.js', import.meta.url))) {
    throw new Error('dist/ is missing: run `npm run build` (npm test does it in pretest).');
  }
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
  const path = binary(name);
  if (!existsSync(path)) {
    throw new Error(`${name} is not installed (${path} is missing): run \`npm ci\`; it is a devDependency.`);
  }
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
  const path = binary(name);
  if (!existsSync(path)) {
    throw new Error(`${name} is not installed (${path} is missing): run \`npm ci\`; it is a devDependency.`);
  }
  const child = spawn(path, args, {
    cwd,
    env: { ...process.env, ...env, PORT: '0', WEBHOOK_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let spawnError = '';
  const exited = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('error', (error) => {
      spawnError = `${name} could not be started: ${error.message}\n`;
      resolve();
    });
  });
  const captured = captureOutput(child.stdout!, child.stderr!, async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  });
  const receiver: Output = { ...captured, describe: () => spawnError + captured.describe() };
  try {
    const [, port] = await waitForLine(receiver, /Listening on http:\/\/\S+:(\d+)\/webhooks/, 15_000, exited);
    return { ...receiver, url: `http://127.0.0.1:${port}/webhooks` };
  } catch (error) {
    await receiver.close();
    throw error;
  }
}

export type Output = Omit<RuntimeReceiver, 'url'>;

/** Keep what a runtime prints; `onOutput` listeners run on each stdout chunk. */
export function captureOutput(
  stdoutStream: Readable,
  stderrStream: Readable,
  close: () => Promise<void>,
): Output {
  let stdout = '';
  let stderr = '';
  const waiting = new Set<() => void>();
  stdoutStream.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const check of waiting) check();
  });
  stderrStream.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return {
    output: () => stdout,
    describe: () => `stdout:\n${stdout}\nstderr:\n${stderr}`,
    onOutput(check) {
      waiting.add(check);
      return () => waiting.delete(check);
    },
    close,
  };
}

/** Resolves with the first match of `pattern` in the output; rejects on timeout or exit, with the output. */
export function waitForLine(
  source: Pick<RuntimeReceiver, 'output' | 'describe' | 'onOutput'>,
  pattern: RegExp,
  timeoutMs = 5_000,
  exited?: Promise<void>,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (error?: Error, match?: RegExpMatchArray) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stop();
      if (error) reject(error);
      else resolve(match!);
    };
    const check = () => {
      const match = source.output().match(pattern);
      if (match) finish(undefined, match);
    };
    const timer = setTimeout(
      () => finish(new Error(`no line matching ${pattern} in ${timeoutMs} ms.\n${source.describe()}`)),
      timeoutMs,
    );
    const stop = source.onOutput(check);
    void exited?.then(() => finish(new Error(`the process exited.\n${source.describe()}`)));
    check();
  });
}
