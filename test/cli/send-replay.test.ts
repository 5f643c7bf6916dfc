/**
 * `service-webhooks send` and `replay`, run as the built bin against an Express receiver in this
 * process: what they print, what the receiver's handlers saw, and the exit codes.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { type AnyWebhookEvent, createWebhooks } from 'service-webhooks';
import { expressWebhooks } from 'service-webhooks/express';
import { createTestEvent } from 'service-webhooks/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { requireBuiltCli, runCli } from './support.js';

const SECRET = 'whsec_send_test';
let handled: AnyWebhookEvent[] = [];
let server: Server;
let url: string;
let directory: string;

beforeAll(async () => {
  requireBuiltCli();
  const webhooks = createWebhooks({ secret: SECRET });
  webhooks.onAny((event) => {
    handled.push(event);
  });
  const app = express();
  app.post('/webhooks', expressWebhooks(webhooks));
  server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  directory = await mkdtemp(join(tmpdir(), 'replay-'));
});

beforeEach(() => {
  handled = [];
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await rm(directory, { recursive: true, force: true });
});

describe('send', () => {
  it('builds, signs and posts a realistic event, printing status, time and body', async () => {
    const result = await runCli([
      'send',
      '--url',
      url,
      '--secret',
      SECRET,
      '--type',
      'user.created',
      '--data',
      '{"email":"grace@example.com"}',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Sending user\.created evt_\w+ to http:/);
    expect(result.stdout).toMatch(/#1 {2}200 {2}\d+ ms {2}\{"received":true\}/);
    expect(handled).toHaveLength(1);
    expect(handled[0]).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'user.created',
      created: expect.any(Number),
      data: expect.objectContaining({ object: 'user', id: expect.any(String), email: 'grace@example.com' }),
      livemode: false,
      pending_webhooks: expect.any(Number),
      request: { id: expect.any(String) },
    });
  });

  it('sends one event N times in parallel: the handler runs once, every other copy is refused or a duplicate', async () => {
    const result = await runCli([
      'send',
      '--url',
      url,
      '--secret',
      SECRET,
      '--type',
      'payment.refunded',
      '--livemode',
      '--repeat',
      '5',
      '--concurrency',
      '5',
    ]);
    const attempts = result.stdout.split('\n').filter((line) => line.startsWith('#'));
    expect(attempts).toHaveLength(5);
    // A copy that meets the first while its handler runs is answered 409 (the service would retry it);
    // one that comes after is a 200 duplicate. Which happens depends on timing, so both are allowed.
    const firstRuns = attempts.filter(
      (line) => / {2}200 /.test(line) && !line.includes('x-webhook-duplicate'),
    );
    const others = attempts.filter(
      (line) => line.includes('x-webhook-duplicate: true') || / {2}409 .*event_in_progress/.test(line),
    );
    expect(firstRuns).toHaveLength(1);
    expect(others).toHaveLength(4);
    expect(result.code).toBe(attempts.some((line) => / 409 /.test(line)) ? 1 : 0);
    expect(handled).toHaveLength(1);
    expect(handled[0]).toMatchObject({ type: 'payment.refunded', livemode: true });
  });

  it('prints a sequential duplicate as 200 with x-webhook-duplicate', async () => {
    const result = await runCli([
      'send',
      '--url',
      url,
      '--secret',
      SECRET,
      '--type',
      'project.deleted',
      '--repeat',
      '2',
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/#1 {2}200 {2}\d+ ms {2}\{"received":true\}/);
    expect(result.stdout).toMatch(
      /#2 {2}200 {2}\d+ ms {2}x-webhook-duplicate: true {2}\{"received":true,"duplicate":true\}/,
    );
    expect(result.stdout).toContain('2 sent: 2 acknowledged (2xx, 1 as duplicates), 0 not');
    expect(handled).toHaveLength(1);
  });

  it('exits 1 when the receiver refuses (a wrong secret is 401 invalid_signature)', async () => {
    const result = await runCli(['send', '--url', url, '--secret', 'whsec_wrong', '--type', 'user.deleted']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/#1 {2}401 .*invalid_signature/);
    expect(handled).toHaveLength(0);
  });

  it('takes the secret from WEBHOOK_SECRET', async () => {
    const result = await runCli(['send', '--url', url, '--type', 'user.updated'], { WEBHOOK_SECRET: SECRET });
    expect(result.code).toBe(0);
    expect(handled).toHaveLength(1);
  });

  it('exits 2 with a pointer to --help on a usage error', async () => {
    const result = await runCli(['send', '--url', url, '--secret', SECRET, '--type', 'user.exploded']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--type must be one of user.created');
    expect(result.stderr).toContain('service-webhooks send --help');
  });
});

describe('replay', () => {
  it('sends recorded events in file order, the recorded bytes as they are', async () => {
    const first = createTestEvent('user.created');
    const second = createTestEvent('payment.succeeded');
    const file = join(directory, 'events.jsonl');
    await writeFile(file, `# recorded\n${JSON.stringify(first)}\n\n${JSON.stringify(second)}\n`);
    const result = await runCli(['replay', file, '--url', url, '--secret', SECRET]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`line 2: user.created ${first.id}`);
    expect(result.stdout).toContain(`line 4: payment.succeeded ${second.id}`);
    expect(result.stdout).toContain('2 events, 2 sent: 2 acknowledged');
    expect(handled).toEqual([first, second]);
  });

  it('answers an already handled event as a duplicate, and --redate refreshes an old event', async () => {
    const old = createTestEvent('user.updated', { created: Math.floor(Date.now() / 1000) - 3 * 86_400 });
    const file = join(directory, 'old.jsonl');
    await writeFile(file, `${JSON.stringify(old)}\n`);

    const refused = await runCli(['replay', file, '--url', url, '--secret', SECRET]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/#1 {2}400 .*event_too_old/);

    const redated = await runCli([
      'replay',
      file,
      '--url',
      url,
      '--secret',
      SECRET,
      '--redate',
      '--repeat',
      '2',
    ]);
    expect(redated.code).toBe(0);
    expect(redated.stdout).toMatch(/#2 {2}200 .*x-webhook-duplicate: true/);
    expect(handled).toHaveLength(1);
    expect(handled[0]?.id).toBe(old.id);
    expect(handled[0]?.created).toBeGreaterThan(old.created);
  });

  it('reports lines that are not events and exits 1', async () => {
    const file = join(directory, 'broken.jsonl');
    await writeFile(file, `not json\n${JSON.stringify(createTestEvent('project.created'))}\n`);
    const result = await runCli(['replay', file, '--url', url, '--secret', SECRET]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('line 1: skipped, not JSON');
    expect(handled).toHaveLength(1);
  });
});
