/** Processes and HTTP helpers shared by the CLI tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const RECEIVER = fileURLToPath(new URL('./fixtures/express-receiver.ts', import.meta.url));
const FAN_OUT_RECEIVER = fileURLToPath(new URL('./fixtures/fan-out-receiver.ts', import.meta.url));

/** The tests run the built bin, as users do; `npm test` builds first. */
export function requireBuiltCli(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first (npm test does).`);
}

/** A child process whose output is collected. */
export interface Child {
  readonly child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

function collect(child: ChildProcess): { output: () => string; exited: Promise<unknown> } {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { output: () => output, exited };
}

function startChild(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<Child & { match: RegExpExecArray }> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { output, exited } = collect(child);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')} did not start: ${output()}`)), 30_000);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited before it was ready: ${output()}`));
    });
    child.stdout?.on('data', () => {
      const match = ready.exec(output());
      if (match) {
        clearTimeout(timer);
        resolve({ child, output, stop, match });
      }
    });
  });
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
export function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** A JSON API call with a test key. */
export async function api(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  key = 'sk_test_cli',
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? undefined : (JSON.parse(text) as unknown),
  };
}

/**
 * Poll `read` until `done` holds, every 25 ms, for up to `timeoutMs` (generous: tests must not depend
 * on how fast the machine is). Answers the last value read.
 */
export async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
