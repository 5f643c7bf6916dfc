/**
 * Run an example app as its own process on the BUILT package (the package tier builds it once, in its
 * globalSetup): tsx without the repository's tsconfig paths, so `service-webhooks/...` resolves through
 * package.json exports to ./dist exactly as in a user's project.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
import { expect } from 'vitest';
import { sendHttp } from '../adapters/http-client.js';
import { assertBuilt, ROOT } from '../support/paths.js';
import { spawnProcess } from '../support/process.js';

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

export function startExample(file: string): RunningExample {
  assertBuilt();
  const example = spawnProcess(process.execPath, ['--import', 'tsx', file], {
    name: file,
    cwd: ROOT,
    env: { ...BUILT_ENV, PORT: '0', WEBHOOK_SECRET: SECRET },
  });
  return {
    child: example.child,
    waitFor: (pattern, timeoutMs = 20_000) => example.waitFor(pattern, timeoutMs),
    stop: () => example.stop(),
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

/**
 * An inbox example's two processes, as a user runs them: the web process acknowledges a delivery while
 * no worker runs (the event waits in the queue), the worker then runs its handler once (attempt 1),
 * and the sender's retry is a duplicate. `settleMs` is how long to watch for a second run, one poll of
 * the worker's engine at least.
 */
export async function expectQueuedThenHandledOnce(
  web: string,
  worker: string,
  settleMs: number,
): Promise<void> {
  const running: RunningExample[] = [];
  try {
    const door = startExample(web);
    running.push(door);
    const [, port] = await door.waitFor(/Listening on http:\/\/\S+:(\d+)\/webhooks/);
    const email = `ada+${Date.now()}@example.com`;
    const body = JSON.stringify(createTestEvent('user.created', { data: { email } }));
    const send = () =>
      sendHttp(`http://127.0.0.1:${port}/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': signPayload(body, SECRET) },
        body: new TextEncoder().encode(body),
      });
    const first = await send();
    expect(first.status, first.body).toBe(200);
    expect(first.body).toBe('{"received":true}');

    const consumer = startExample(worker);
    running.push(consumer);
    let printed = '';
    consumer.child.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
    });
    await consumer.waitFor(/Worker ready on example-/);
    const [line] = await consumer.waitFor(
      new RegExp(`user\\.created ${email.replace(/[.+]/g, '\\$&')} attempt 1, received \\S+`),
    );
    expect(line).toContain('attempt 1');
    const retry = await send();
    expect(retry.status).toBe(200);
    expect(retry.headers['x-webhook-duplicate']).toBe('true');
    // Once: a second run would print a second line.
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    expect(printed.split('\n').filter((text) => text.startsWith(`user.created ${email} `))).toHaveLength(1);
  } finally {
    await Promise.all(running.map((example) => example.stop()));
  }
}
