/**
 * `service-webhooks dev` run in process, as the bin runs it: its flags, what it prints at start (the
 * secret stays out of the banner unless asked for), where it keeps its history, and its failures. The
 * dashboard itself is tested in test/dashboard (its server) and test/dashboard/browser.package.test.ts
 * (the page, in Chromium).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/args.js';
import { DEV_HELP, DEV_TOKEN_ENV, defaultDataFile, runDev } from '../../src/cli/dev-command.js';
import { run } from '../../src/cli/run.js';
import { writeStandInPage } from '../dashboard/support.js';

let directory: string;
let assets: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dev-command-'));
  assets = await writeStandInPage(join(directory, 'assets'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function start(args: string[], page = assets) {
  const lines: string[] = [];
  const stopping = new AbortController();
  const exit = runDev(
    ['--port', '0', ...args],
    { out: (line) => lines.push(line), err: (line) => lines.push(line) },
    stopping.signal,
    page,
  );
  const output = () => lines.join('\n');
  const deadline = Date.now() + 10_000;
  let finished: number | undefined;
  void exit.then((code) => {
    finished = code;
  });
  while (!output().includes('dashboard at') && finished === undefined) {
    if (Date.now() > deadline) throw new Error(`no banner; printed:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    output,
    exit,
    stop: async () => {
      stopping.abort();
      return exit;
    },
  };
}

describe('service-webhooks dev', () => {
  it('is listed in the main help and has its own', async () => {
    const lines: string[] = [];
    expect(await run(['--help'], { out: (line) => lines.push(line), err: () => {} })).toBe(0);
    expect(lines.join('\n')).toMatch(/^ {2}dev {9}look at your webhooks/m);
    const help: string[] = [];
    expect(await runDev(['--help'], { out: (line) => help.push(line), err: () => {} })).toBe(0);
    expect(help.join('\n')).toBe(DEV_HELP);
    expect(DEV_HELP).toContain('--forward URL');
    expect(DEV_HELP).toContain('devReporter()');
  });

  it('refuses a missing or unusable --forward, and contradictory flags, as usage errors', async () => {
    const io = { out: () => {}, err: () => {} };
    await expect(runDev([], io)).rejects.toThrow(new UsageError('--forward is required.'));
    await expect(runDev(['--forward', 'localhost:3000'], io)).rejects.toThrow(/--forward must be an/);
    await expect(runDev(['--forward', 'ftp://example.com/'], io)).rejects.toThrow(/http:\/\/ or https:\/\//);
    await expect(
      runDev(['--forward', 'http://localhost:3000/', '--data', 'x.json', '--in-memory'], io),
    ).rejects.toThrow('Give --data or --in-memory, not both.');
    await expect(runDev(['--forward', 'http://localhost:3000/', '--history', '0'], io)).rejects.toThrow(
      /--history must be an integer from 1/,
    );
    const errors: string[] = [];
    expect(await run(['dev'], { out: () => {}, err: (line) => errors.push(line) })).toBe(2);
    expect(errors.join('\n')).toBe('--forward is required. Run service-webhooks dev --help.');
  });

  it('prints where everything is, but not the secret unless asked', async () => {
    const secret = 'whsec_banner_secret_1234';
    const dataFile = join(directory, 'banner.json');
    const quiet = await start([
      '--forward',
      'http://localhost:3000/webhooks',
      '--secret',
      secret,
      '--data',
      dataFile,
    ]);
    const banner = quiet.output();
    expect(await quiet.stop()).toBe(0);
    expect(banner).toMatch(/dashboard at http:\/\/127\.0\.0\.1:\d+\//);
    expect(banner).toContain('delivering to   http://localhost:3000/webhooks');
    expect(banner).toContain('secret          …1234 (--print-secret shows it)');
    expect(banner).not.toContain(secret);
    expect(banner).toMatch(
      /SERVICE_WEBHOOKS_DEV_URL=http:\/\/127\.0\.0\.1:\d+\/_dev\/api\/report\?token=[\w-]{20,}/,
    );
    expect(banner).toContain(`history         ${dataFile} (the last 1000)`);
    // A new key at each start, printed; sk_test_dev is no longer a key every page knows.
    expect(banner).toMatch(
      /sandbox API {5}http:\/\/127\.0\.0\.1:\d+\/v1 \(Bearer sk_test_[0-9a-f]{48}, new at each start\)/,
    );
    expect(quiet.output()).toContain('service-webhooks dev stopped');

    // The saved secret is used again without --secret, and shown when asked.
    const loud = await start([
      '--forward',
      'http://localhost:3000/webhooks',
      '--data',
      dataFile,
      '--print-secret',
    ]);
    expect(loud.output()).toContain(`secret          ${secret}`);
    expect(await loud.stop()).toBe(0);

    // A fixed key only when asked for.
    const fixed = await start([
      '--forward',
      'http://localhost:3000/webhooks',
      '--in-memory',
      '--api-key',
      'sk_test_mine',
    ]);
    expect(fixed.output()).toMatch(/sandbox API {5}http:\/\/127\.0\.0\.1:\d+\/v1 \(Bearer sk_test_mine\)/);
    expect(await fixed.stop()).toBe(0);
    await expect(
      runDev(['--forward', 'http://localhost:3000/', '--api-key', 'sk_live_1'], {
        out: () => {},
        err: () => {},
      }),
    ).rejects.toThrow(/--api-key must be a test key/);
  });

  it('keeps the history with the project when it has node_modules, else in the temporary folder', async () => {
    const project = join(directory, 'project');
    await mkdir(join(project, 'node_modules'), { recursive: true });
    expect(defaultDataFile(project)).toBe(
      join(project, 'node_modules', '.cache', 'service-webhooks', 'dev.json'),
    );
    const bare = join(directory, 'bare');
    await mkdir(bare);
    // In this user's own folder: the shared temporary folder's names are predictable to every user.
    expect(defaultDataFile(bare)).toMatch(
      new RegExp(`^${tmpdir()}/service-webhooks-${process.getuid?.()}/dev-[0-9a-f]{12}\\.json$`),
    );
    expect(defaultDataFile(bare)).not.toBe(defaultDataFile(project));
  });

  it('says what to do when the port is taken or the page was never built', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as AddressInfo;
    try {
      const taken = await start([
        '--forward',
        'http://localhost:3000/',
        '--in-memory',
        '--port',
        String(port),
      ]);
      expect(await taken.exit).toBe(1);
      expect(taken.output()).toContain(`Port ${port} on 127.0.0.1 is in use`);
    } finally {
      blocker.close();
    }
    const unbuilt = await start(
      ['--forward', 'http://localhost:3000/', '--in-memory'],
      join(directory, 'nowhere'),
    );
    expect(await unbuilt.exit).toBe(1);
    expect(unbuilt.output()).toMatch(/The dashboard's page is missing .*run npm run build first/);
  });
  it('prints the MCP endpoint with a fixed token from --token or SERVICE_WEBHOOKS_DEV_TOKEN, and refuses a short one', async () => {
    const io = { out: () => {}, err: () => {} };
    await expect(runDev(['--forward', 'http://localhost:3000/', '--token', 'short'], io)).rejects.toThrow(
      /--token \(or SERVICE_WEBHOOKS_DEV_TOKEN\) must be 16 printable characters/,
    );
    const flagged = await start([
      '--forward',
      'http://127.0.0.1:9/webhooks',
      '--in-memory',
      '--token',
      'a-fixed-token-for-agents',
    ]);
    expect(flagged.output()).toMatch(
      /^ {2}MCP \(agents\) {4}http:\/\/127\.0\.0\.1:\d+\/mcp \(header x-service-webhooks-dev-token: a-fixed-token-for-agents\)$/m,
    );
    expect(await flagged.stop()).toBe(0);
    const previous = process.env[DEV_TOKEN_ENV];
    process.env[DEV_TOKEN_ENV] = 'a-token-from-the-environment';
    try {
      const fromEnv = await start(['--forward', 'http://127.0.0.1:9/webhooks', '--in-memory']);
      expect(fromEnv.output()).toContain('x-service-webhooks-dev-token: a-token-from-the-environment)');
      expect(await fromEnv.stop()).toBe(0);
    } finally {
      if (previous === undefined) delete process.env[DEV_TOKEN_ENV];
      else process.env[DEV_TOKEN_ENV] = previous;
    }
    const random = await start(['--forward', 'http://127.0.0.1:9/webhooks', '--in-memory']);
    expect(random.output()).toMatch(/x-service-webhooks-dev-token: \S{16,}, new at each start\)/);
    expect(await random.stop()).toBe(0);
  });
});
