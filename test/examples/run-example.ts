/**
 * Run an example app as its own process on the BUILT package (npm test builds first): tsx without
 * the repository's tsconfig paths, so `service-webhooks/...` resolves through package.json exports to
 * ./dist exactly as in a user's project.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { sendHttp } from '../adapters/http-client.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The environment that makes tsx resolve the package to ./dist rather than to the sources. */
export const BUILT_ENV = {
  TSX_TSCONFIG_PATH: fileURLToPath(new URL('./tsconfig.built.json', import.meta.url)),
};
const SECRET = 'whsec_example_test';

export interface RunningExample {
  child: ChildProcess;
  /** Resolves when stdout has printed a line matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

export function assertBuilt(): void {
  if (!existsSync(new URL('../../dist/index.js', import.meta.url))) {
    throw new Error('dist/ is missing: run `npm run build` (npm test does it in pretest).');
  }
}

export function startExample(file: string): RunningExample {
  assertBuilt();
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, ...BUILT_ENV, PORT: '0', WEBHOOK_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiting = new Set<() => void>();
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const check of waiting) check();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    waitFor: (pattern, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(
            new Error(
              `no line matching ${pattern} in ${timeoutMs} ms.\nstdout: ${stdout}\nstderr: ${stderr}`,
            ),
          );
        }, timeoutMs);
        const check = () => {
          const match = stdout.match(pattern);
          if (!match) return;
          clearTimeout(timer);
          waiting.delete(check);
          resolve(match);
        };
        waiting.add(check);
        void exited.then(() => {
          if (!waiting.has(check)) return;
          clearTimeout(timer);
          reject(new Error(`the example exited.\nstdout: ${stdout}\nstderr: ${stderr}`));
        });
        check();
      }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** Start the example, deliver one signed `user.created` and prove its handler ran. */
export async function deliverToExample(file: string): Promise<void> {
  const example = startExample(file);
  try {
    const [, port] = await example.waitFor(/Listening on http:\/\/\S+:(\d+)\/webhooks/);
    const email = `ada+${Date.now()}@example.com`;
    const body = JSON.stringify(createTestEvent('user.created', { data: { email } }));
    const response = await sendHttp(`http://127.0.0.1:${port}/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
      body: new TextEncoder().encode(body),
    });
    if (response.status !== 200) throw new Error(`the example answered ${response.status}: ${response.body}`);
    await example.waitFor(new RegExp(`user\\.created ${email.replace(/[.+]/g, '\\$&')}`));
  } finally {
    await example.stop();
  }
}
