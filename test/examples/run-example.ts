/**
 * Run an example app as its own process on the BUILT package (the package tier builds it once, in its
 * globalSetup): tsx without the repository's tsconfig paths, so `service-webhooks/...` resolves through
 * package.json exports to ./dist exactly as in a user's project.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestEvent, signPayload } from 'service-webhooks/testing';
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
