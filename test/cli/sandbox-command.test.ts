/**
 * `service-webhooks sandbox` run in process, as the bin runs it, for what it prints at start: the JWT
 * signing key mints access tokens for any user, so it stays out of the banner (and so out of
 * terminal scrollback, CI logs and screenshots) unless `--print-signing-key` asks for it.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSandbox, SANDBOX_HELP } from '../../src/cli/sandbox-command.js';

const KEY = 'a-signing-key-of-at-least-32-characters';

let directory: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'sandbox-command-'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** Start the command, wait for its banner; `stop` ends it as Ctrl-C would and answers the exit code. */
async function start(args: string[]): Promise<{ output: () => string; stop: () => Promise<number> }> {
  const lines: string[] = [];
  const stopping = new AbortController();
  const exit = runSandbox(
    ['--port', '0', ...args],
    { out: (line) => lines.push(line), err: (line) => lines.push(line) },
    stopping.signal,
  );
  const output = () => lines.join('\n');
  const deadline = Date.now() + 10_000;
  while (!output().includes('listening on')) {
    if (Date.now() > deadline) throw new Error(`no banner; printed:\n${output()}`);
    await Promise.race([exit, new Promise((resolve) => setTimeout(resolve, 20))]);
  }
  return {
    output,
    stop: async () => {
      stopping.abort();
      return exit;
    },
  };
}

/** The key a sandbox saved in `dataFile`, once the (asynchronous) first save is on disk. */
async function savedKey(dataFile: string): Promise<string> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      return (JSON.parse(await readFile(dataFile, 'utf8')) as { jwt_signing_key: string }).jwt_signing_key;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

describe('the JWT signing key', () => {
  it('is not printed at start by default; the banner says how to see it', async () => {
    const sandbox = await start(['--jwt-secret', KEY]);
    expect(sandbox.output()).not.toContain(KEY);
    expect(sandbox.output()).toMatch(/jwt: HS256, signing key not printed \(--print-signing-key\)/);
    expect(await sandbox.stop()).toBe(0);
    expect(sandbox.output()).not.toContain(KEY);
  });

  it('is not printed when random either (read back from the data file it is saved in)', async () => {
    const dataFile = join(directory, 'random-key.json');
    const sandbox = await start(['--data', dataFile]);
    const key = await savedKey(dataFile);
    expect(key).toMatch(/^\S{32,}$/);
    expect(sandbox.output()).not.toContain(key);
    expect(await sandbox.stop()).toBe(0);
  });

  it('is printed with --print-signing-key', async () => {
    const sandbox = await start(['--jwt-secret', KEY, '--print-signing-key']);
    expect(sandbox.output()).toContain(`jwt: HS256, signing key ${KEY}`);
    expect(await sandbox.stop()).toBe(0);
  });

  it('--help documents the opt-in', () => {
    expect(SANDBOX_HELP).toMatch(/--print-signing-key +print the JWT signing key at start/);
  });
});
