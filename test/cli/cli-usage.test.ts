/**
 * The built bin's rough edges: usage errors for addresses without a scheme, unknown statuses and keys
 * that are not test keys; one-line messages for files that cannot be used; `--version`; and
 * `deliveries --events` printing each event once, so a replay of it sends no duplicates.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Delivery, type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { api, ROOT, requireBuiltCli, runCli, waitFor } from './support.js';

let directory: string;

beforeAll(async () => {
  requireBuiltCli();
  directory = await mkdtemp(join(tmpdir(), 'cli-usage-'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

function oneLine(text: string): string {
  expect(text.trimEnd().split('\n')).toHaveLength(1);
  return text.trim();
}

describe('usage', () => {
  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const result = await runCli(['--version']);
    expect(result).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it.each([
    [
      ['send', '--url', 'localhost:3000/x', '--secret', 's', '--type', 'user.created'],
      /--url must be an http:\/\/ or https:\/\/ URL, such as http:\/\/localhost:3000\/x/,
    ],
    [
      ['replay', 'events.jsonl', '--url', 'ftp://example.com/x', '--secret', 's'],
      /--url must be an http:\/\/ or https:\/\/ URL/,
    ],
    [['deliveries', '--status', 'bogus'], /--status must be one of pending, succeeded, failed, got bogus/],
    [['deliveries', '--sandbox', '127.0.0.1:4010/v1'], /--sandbox must be an http:\/\/ or https:\/\/ URL/],
    [['sandbox', '--api-key', 'pk_test_x'], /--api-key must be a test key/],
    [['sandbox', '--api-key', 'sk_test_bad-key'], /--api-key must be a test key/],
    [['sandbox', '--oauth-client', 'app:secret'], /--oauth-client must be ID:SECRET:REDIRECT_URI/],
    [
      ['sandbox', '--oauth-client', 'app:secret:localhost:3000/cb'],
      /redirect URI localhost:3000\/cb is not an http\(s\) address/,
    ],
    [['sandbox', '--jwt-secret', 'short'], /--jwt-secret must be at least 32 characters/],
  ])('%j is a usage error (exit 2)', async (args, message) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(oneLine(result.stderr)).toMatch(message);
    expect(result.stdout).toBe('');
  });
});

describe('files that cannot be used: one line, at once', () => {
  it('replay of a missing file', async () => {
    const file = join(directory, 'nothing.jsonl');
    const result = await runCli(['replay', file, '--url', 'http://127.0.0.1:9/x', '--secret', 's']);
    expect(result.code).toBe(2);
    expect(oneLine(result.stderr)).toBe(`Cannot read ${file}: no such file.`);
  });

  it('sandbox --data in a folder that does not exist: fails at start, nothing listens', async () => {
    const file = join(directory, 'missing', 'sandbox.json');
    const result = await runCli(['sandbox', '--port', '0', '--data', file]);
    expect(result.code).toBe(1);
    expect(oneLine(result.stderr)).toBe(
      `Cannot keep data in ${file}: the folder ${join(directory, 'missing')} does not exist; create it or pass another --data file.`,
    );
    expect(result.stdout).not.toContain('listening');
  });

  it('sandbox --data of the wrong shape', async () => {
    const file = join(directory, 'wrong.json');
    await writeFile(file, JSON.stringify({ version: 2, accounts: { 'key:sk_test_x': { users: 'nobody' } } }));
    const result = await runCli(['sandbox', '--port', '0', '--data', file]);
    expect(result.code).toBe(1);
    expect(oneLine(result.stderr)).toBe(
      `${file} is not a valid sandbox data file: accounts["key:sk_test_x"].users must be an array; move it away or pass another --data file.`,
    );
  });
});

describe('deliveries --events', () => {
  let sandbox: Sandbox;
  let receiver: Server;
  let receiverUrl: string;
  const bodies: string[] = [];

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on('end', () => {
        bodies.push(body);
        response.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    sandbox = await startSandbox({ port: 0, allowHttp: true, rateLimit: 10_000 });
  });

  afterAll(async () => {
    await sandbox?.close();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('prints an event delivered to two webhooks once, so replaying the file sends it once', async () => {
    for (const path of ['/one', '/two']) {
      await api(sandbox.url, 'POST', '/webhooks', {
        url: `${receiverUrl}${path}`,
        events: ['user.created'],
        secret: 's',
      });
    }
    await api(sandbox.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
    await waitFor(
      async () => ((await api(sandbox.url, 'GET', '/sandbox/deliveries')).body as { data: Delivery[] }).data,
      (list) => list.length === 2 && list.every((delivery) => delivery.status === 'succeeded'),
    );
    const listed = await runCli(['deliveries', '--sandbox', sandbox.url, '--events']);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).type)).toEqual(['user.created']);

    const file = join(directory, 'events.jsonl');
    await writeFile(file, listed.stdout);
    bodies.length = 0;
    const replayed = await runCli(['replay', file, '--url', `${receiverUrl}/replay`, '--secret', 's']);
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toMatch(/^1 events, 1 sent/m);
    expect(bodies).toHaveLength(1);
  });
});
