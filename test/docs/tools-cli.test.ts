/**
 * docs/tools/cli.md, run as a reader runs it, in a project made with the page's own commands (`npm init
 * -y`, then `npm install service-webhooks tsx`, the packed build for service-webhooks): the
 * walkthrough's receiver (the page's `server.ts`) in a process of its own, then the page's commands with
 * bash in that project, `npx service-webhooks` finding the package's bin there. The page promises that five copies of one event run the handler once and that four of them are
 * answered as duplicates; the sandbox part promises that replaying what the sandbox delivered is
 * answered as duplicates too.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SpawnedProcess, startProcess } from '../support/process.js';
import { docBlock, type ReaderProject, readerProject } from './support.js';

const PAGE = 'docs/tools/cli.md';
const SECRET = 'whsec_local';

/** A port free right now, for a process that prints the port it was given rather than the one it got. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

let project: ReaderProject;
/** The page's command that starts the receiver: `WEBHOOK_SECRET=… npx tsx server.ts`. */
let startCommand: string;

/** Run a page's `sh` block with bash in the reader's project, as the reader's shell would. */
async function runShell(code: string): Promise<{ stdout: string; stderr: string }> {
  return project.shell(code, {}, 60_000);
}

async function startReceiver(): Promise<{ process: SpawnedProcess; url: string }> {
  const port = await freePort();
  const [, secret, runner, file] = /^WEBHOOK_SECRET=(\S+) npx (tsx) (server\.ts)$/.exec(startCommand) ?? [];
  expect(secret).toBe(SECRET);
  // The tsx that `npx tsx` finds in the project, started directly: stopping the test's process then
  // stops the receiver (tsx passes the signal on), where npm exec in between would get it instead.
  const started = await startProcess(join(project.dir, 'node_modules', '.bin', runner!), [file!], {
    name: 'the walkthrough receiver',
    cwd: project.dir,
    env: { WEBHOOK_SECRET: secret!, PORT: String(port) },
    ready: /Listening on http:\/\/localhost:(\d+)\/webhooks/,
  });
  expect(started.match[1]).toBe(String(port));
  return { process: started, url: `http://127.0.0.1:${port}/webhooks` };
}

/** The page's commands, pointed at the test's ports instead of 3000 and 4010. */
function retarget(code: string, receiverUrl: string, sandboxOrigin?: string): string {
  let result = code.replaceAll('http://localhost:3000/webhooks', receiverUrl);
  if (sandboxOrigin) result = result.replaceAll('http://127.0.0.1:4010', sandboxOrigin);
  return result;
}

/** How many lines the receiver printed for a handler run of `eventId`. */
function handlerRuns(receiver: SpawnedProcess, eventId: string): number {
  return receiver
    .output()
    .split('\n')
    .filter((line) => line.startsWith('handled ') && line.includes(eventId)).length;
}

beforeAll(async () => {
  project = await readerProject('tools-cli');
  project.save(docBlock(PAGE, 'walkthrough-receiver'), 'server.ts');
  // The page's commands that make the project, then (below, per test) the one that starts the receiver.
  const commands = docBlock(PAGE, 'walkthrough-start').code.trim().split('\n');
  startCommand = commands.pop()!;
  expect(commands).toEqual(['npm init -y', 'npm install service-webhooks tsx']);
  await project.shell(commands.join('\n'));
  expect(project.packageJson().type).toBe('commonjs');
}, 180_000);

afterAll(() => {
  project?.remove();
});

describe('docs/tools/cli.md', () => {
  it('dedup walkthrough: five copies of one event run the handler once, four are answered as duplicates', async () => {
    const receiver = await startReceiver();
    try {
      const block = docBlock(PAGE, 'dedup-walkthrough');
      expect(block.lang).toBe('sh');
      expect(block.code).toContain('--repeat 5 --concurrency 5');
      const { stdout } = await runShell(retarget(block.code, receiver.url));

      // Three commands, each announcing its event.
      const sent = [...stdout.matchAll(/^Sending (\S+) (evt_\w+)/gm)].map((match) => ({
        type: match[1],
        id: match[2]!,
      }));
      expect(sent.map((event) => event.type)).toEqual(['user.created', 'payment.failed', 'user.created']);
      expect(stdout).toContain('"amount":4200');

      // The repeated event: what the page says the reader sees.
      expect(stdout).toMatch(/\(5 times, 5 at a time\)/);
      expect(stdout).toContain('5 sent: 5 acknowledged (2xx, 4 as duplicates), 0 not');
      expect(stdout.match(/x-webhook-duplicate: true/g)).toHaveLength(4);

      // And the receiver ran each event's handler exactly once.
      await receiver.process.waitFor(new RegExp(`handled user\\.created ${sent[2]!.id}`));
      for (const event of sent) expect(handlerRuns(receiver.process, event.id)).toBe(1);
      expect(receiver.process.output()).toMatch(/handled user\.created evt_\w+ for ada@example\.com/);
    } finally {
      await receiver.process.stop();
    }
  });

  it('sandbox walkthrough: the sandbox delivers, deliveries lists it, the replay is answered as duplicates', async () => {
    const receiver = await startReceiver();
    const port = await freePort();
    const start = docBlock(PAGE, 'sandbox-start');
    const command = start.code
      .trim()
      .replace(/^npx service-webhooks /, '')
      .split(/\s+/);
    expect(command).toEqual(['sandbox', '--allow-http']);
    // The bin that `npx service-webhooks` finds in the project, started directly (for its signals).
    const sandbox = await startProcess(
      join(project.dir, 'node_modules', '.bin', 'service-webhooks'),
      [...command, '--port', String(port)],
      {
        name: 'the walkthrough sandbox',
        cwd: project.dir,
        ready: /listening on http:\S+\/v1/,
        timeoutMs: 30_000,
      },
    );
    try {
      const block = docBlock(PAGE, 'sandbox-walkthrough');
      const origin = `http://127.0.0.1:${port}`;
      // The page's deliveries commands use the default --sandbox address; point them at this one.
      const code = retarget(block.code, receiver.url, origin).replaceAll(
        'npx service-webhooks deliveries',
        `npx service-webhooks deliveries --sandbox ${origin}/v1`,
      );
      // Run it in two parts, as a reader types it: the calls that cause events, then (once the
      // receiver has handled both deliveries, which a reader sees in its terminal) the listing and the
      // replay, so the replay never races the sandbox's own first delivery.
      const split = code.indexOf('# Every delivery');
      expect(split).toBeGreaterThan(0);
      await runShell(code.slice(0, split));

      // The sandbox delivered a user.created and a payment.failed; the receiver handled each once.
      await receiver.process.waitFor(/handled payment\.failed evt_\w+/);
      await receiver.process.waitFor(/handled user\.created evt_\w+ for ada@example\.com/);
      const exportKey = /^export KEY=.*$/m.exec(code)?.[0];
      expect(exportKey).toBeDefined();
      const { stdout } = await runShell(`${exportKey}\n${code.slice(split)}`);
      const handled = [...receiver.process.output().matchAll(/^handled \S+ (evt_\w+)/gm)].map(
        (match) => match[1]!,
      );
      expect(handled).toHaveLength(2);

      // The listing shows both deliveries; the replay sent both events again, answered as duplicates.
      expect(stdout).toMatch(/user\.created/);
      expect(stdout).toMatch(/payment\.failed/);
      expect(stdout).toContain('x-webhook-duplicate: true');
      const replayed = [...stdout.matchAll(/x-webhook-duplicate: true/g)];
      expect(replayed).toHaveLength(2);
      for (const id of handled) expect(handlerRuns(receiver.process, id)).toBe(1);
    } finally {
      await sandbox.stop();
      await receiver.process.stop();
    }
  });
});
