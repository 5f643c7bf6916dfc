/**
 * The test the dashboard exports is ready to run: written beside a receiver module, as a user would
 * save it, it passes against a receiver that handles the event, and fails against one whose handler
 * still throws (a regression test, not a recording). It runs in a vitest process of its own, from a
 * `.temp` folder the project's own test runs skip.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import ts from 'typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevDelivery } from '../../src/dashboard/api-types.js';
import { testFile } from '../../src/dashboard/delivery-export.js';
import { type DevServer, startDevServer } from '../../src/dashboard/dev-server.js';
import { repoPath } from '../support/paths.js';
import {
  devApi,
  openStream,
  settled,
  startReceiver,
  type TestReceiver,
  writeStandInPage,
} from './support.js';

const TOKEN = 'exported-test-token';
const folder = repoPath('test', 'dashboard', '.temp', `exported-${process.pid}`);
let receiver: TestReceiver;
let dev: DevServer;

beforeAll(async () => {
  await writeStandInPage(folder);
  receiver = await startReceiver('whsec_exported_test');
  dev = await startDevServer({
    forward: receiver.url,
    secret: 'whsec_exported_test',
    port: 0,
    timeScale: 0.001,
    assetsFolder: folder,
    token: TOKEN,
  });
});

afterAll(async () => {
  await dev?.close();
  await receiver?.close();
  await rm(folder, { recursive: true, force: true });
});

function receiverModule(handlerBody: string): string {
  return `import { createWebhooks } from 'service-webhooks';
export function createReceiver(secret: string) {
  const webhooks = createWebhooks({ secret });
  webhooks.on('payment.failed', (event) => { ${handlerBody} });
  webhooks.onError(() => {});
  return webhooks;
}
`;
}

function runExported(
  where = folder,
  args: readonly string[] = [],
): { status: number | null; output: string } {
  const run = spawnSync(
    process.execPath,
    [
      repoPath('node_modules', 'vitest', 'vitest.mjs'),
      'run',
      '--config',
      join(where, 'vitest.config.ts'),
      ...args,
    ],
    { cwd: where, encoding: 'utf8', timeout: 60_000 },
  );
  return { status: run.status, output: `${run.stdout}\n${run.stderr}` };
}

it('exports a test that passes once the receiver handles the event, and fails while it throws', async () => {
  const stream = await openStream(dev.url, TOKEN);
  const sent = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', {
    type: 'payment.failed',
  });
  const delivery = sent.body.data[0]!;
  await stream.next(settled(delivery.id, 'succeeded'));
  stream.close();
  const exported = await devApi<string>(dev.url, TOKEN, 'GET', `/deliveries/${delivery.id}/export?as=test`);
  const name = /filename="([^"]+)"/.exec(exported.headers.get('content-disposition') ?? '')![1]!;
  await writeFile(join(folder, name), exported.body);
  await writeFile(
    join(folder, 'vitest.config.ts'),
    `import { packageAliases } from '${repoPath('vitest.config.ts')}';
export default { resolve: { alias: packageAliases }, test: { include: ['*.test.ts'] } };
`,
  );

  await writeFile(
    join(folder, 'receiver.ts'),
    receiverModule('if (!event.data.id) throw new Error("no id");'),
  );
  const passing = runExported();
  expect(passing.output).toContain('1 passed');
  expect(passing.status, passing.output).toBe(0);

  await writeFile(join(folder, 'receiver.ts'), receiverModule('throw new Error("the ledger is down");'));
  const failing = runExported();
  expect(failing.status).toBe(1);
  expect(failing.output).toContain('handler_failed');
}, 120_000);

/** A delivery as the dashboard holds it, with what a receiver, an edit or the sender put in its strings. */
function hostileDelivery(eventId: string, eventType: string, receiverMessage: string): DevDelivery {
  const event = {
    id: eventId,
    type: eventType,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    data: { id: 'pay_hostile', amount: 1200 },
  };
  const receiverError = {
    name: 'HandlerFailedError',
    code: 'handler_failed',
    message: 'A handler threw while handling the event.',
    stack: undefined,
    cause: { name: 'Error', code: undefined, message: receiverMessage, stack: undefined, cause: undefined },
  };
  return {
    id: 'dlv_hostile',
    event_id: eventId,
    event_type: eventType,
    status: 'failed',
    label: 'edited',
    url: 'http://127.0.0.1:3000/webhooks',
    created_at: new Date().toISOString(),
    next_attempt_at: null,
    next_attempt: null,
    in_flight: false,
    revision: 1,
    event,
    retried: true,
    attempts: [
      {
        attempt: 1,
        started_at: new Date().toISOString(),
        duration_ms: 3,
        status: 500,
        error: null,
        response_body: '',
        code: receiverMessage,
        duplicate: false,
        stale: false,
        retry_after: null,
        receiver: {
          eventId,
          eventType,
          outcome: 'failed',
          status: 500,
          code: 'handler_failed',
          durationMs: 3,
          secretIndex: 0,
          error: receiverError,
          late: false,
          level: 'error',
          message: 'webhook delivery failed',
          at: new Date().toISOString(),
          pid: 1,
        },
      },
      {
        attempt: 2,
        started_at: new Date().toISOString(),
        duration_ms: 30_000,
        status: null,
        error: receiverMessage,
        response_body: '',
        code: null,
        duplicate: false,
        stale: false,
        retry_after: null,
        receiver: null,
      },
    ],
  };
}

it('nothing in a delivery breaks out of the exported file: a receiver’s error message, an edited id or type', async () => {
  const hostile = join(folder, 'hostile');
  await mkdir(hostile, { recursive: true });
  const marker = join(hostile, 'injected.txt');
  const write = (what: string) =>
    `(await import('node:fs')).writeFileSync(${JSON.stringify(marker)}, '${what}')`;
  // Each would run as a statement of the exported file if the value were pasted into its code.
  const message = `the ledger is down\n${write('message')}; process.exit(1) //`;
  const id = `evt_hostile', async () => { ${write('id')}; }); test('evt`;
  const type = `payment.failed\u2028${write('type')}; // \` \${process.exit(1)} */`;
  const byMessageAndId = hostileDelivery(id, 'payment.failed', message);
  const byType = hostileDelivery('evt_hostile_type', type, message);
  const files = [testFile(byMessageAndId), testFile(byType)];
  for (const file of files) await writeFile(join(hostile, file.name), file.text);
  await writeFile(join(hostile, 'receiver.ts'), receiverModule(''));
  await writeFile(
    join(hostile, 'vitest.config.ts'),
    `import { packageAliases } from '${repoPath('vitest.config.ts')}';
export default { resolve: { alias: packageAliases }, test: { include: ['*.test.ts'] } };
`,
  );
  const results = join(hostile, 'results.json');
  const run = runExported(hostile, ['--reporter=json', `--outputFile=${results}`]);

  expect(existsSync(marker), `an injected statement ran:\n${run.output}`).toBe(false);
  const report = JSON.parse(await readFile(results, 'utf8')) as {
    testResults: {
      name: string;
      message: string;
      assertionResults: { title: string; status: string; failureMessages: string[] }[];
    }[];
  };
  const byFile = new Map(report.testResults.map((result) => [basename(result.name), result]));
  // The first parses and passes: its title carries the id as it was, quotes and all.
  const first = byFile.get(files[0]!.name)!;
  expect(first.message, run.output).toBe('');
  expect(first.assertionResults.map((test) => [test.title, test.status])).toEqual([
    [`payment.failed ${id} is handled once`, 'passed'],
  ]);
  // The second parses and runs: it fails only because no handler takes a type the service never sends.
  const second = byFile.get(files[1]!.name)!;
  expect(second.message, run.output).toBe('');
  expect(second.assertionResults.map((test) => [test.title, test.status])).toEqual([
    [`${type} evt_hostile_type is handled once`, 'failed'],
  ]);
  expect(second.assertionResults[0]!.failureMessages.join('\n')).toContain("expected undefined to be 'true'");
}, 120_000);

/** The exported file's statements, as the TypeScript parser reads them, and its comments before them. */
function parseExported(text: string) {
  const { diagnostics } = ts.transpileModule(text, {
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  const source = ts.createSourceFile('exported.test.ts', text, ts.ScriptTarget.Latest, true);
  const comments = ts.getLeadingCommentRanges(text, 0) ?? [];
  return { diagnostics: diagnostics ?? [], source, comments };
}

function kindOf(statement: ts.Statement): string {
  if (ts.isImportDeclaration(statement)) return 'import';
  if (ts.isVariableStatement(statement)) return 'const';
  if (ts.isExpressionStatement(statement)) return 'expression';
  return ts.SyntaxKind[statement.kind] ?? 'unknown';
}

it('any strings in a delivery stay values: the file parses to the same statements, its comments stay comments', () => {
  const anyString = fc.string({ unit: 'binary', maxLength: 40 });
  const text = fc.oneof(
    anyString,
    fc.constantFrom(
      '\n',
      '\r',
      '\u2028',
      '\u2029',
      '*/',
      '`',
      '${',
      "'",
      '"',
      '\\',
      '</script>',
      '__proto__',
    ),
  );
  const piece = fc.array(text, { maxLength: 4 }).map((parts) => parts.join(''));
  fc.assert(
    fc.property(piece, piece, piece, piece, (id, type, message, key) => {
      const delivery = hostileDelivery(id, type, message);
      const event = {
        ...delivery.event,
        data: JSON.parse(`{${JSON.stringify(key)}: {"nested": ${JSON.stringify(message)}}}`),
      };
      const { text: exported } = testFile({ ...delivery, event });
      const { diagnostics, source, comments } = parseExported(exported);
      expect(diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
      expect(source.statements.map(kindOf)).toEqual([
        'import',
        'import',
        'import',
        'const',
        'const',
        'expression',
      ]);
      // The header's lines (two, and one per attempt) are each one comment, none ended early.
      expect(comments.filter((comment) => comment.end <= source.statements[0]!.getStart())).toHaveLength(
        2 + delivery.attempts.length,
      );
      const call = (source.statements[5] as ts.ExpressionStatement).expression as ts.CallExpression;
      expect(ts.isStringLiteral(call.arguments[0]!)).toBe(true);
      expect((call.arguments[0] as ts.StringLiteral).text).toBe(`${type} ${id} is handled once`);
      // The event the test delivers is the event as it was sent (a `__proto__` key included).
      const declaration = (source.statements[4] as ts.VariableStatement).declarationList.declarations[0]!;
      const delivered = new Function(`return (${declaration.initializer!.getText()});`)() as unknown;
      expect(JSON.stringify(delivered)).toBe(JSON.stringify({ ...event, pending_webhooks: 1 }));
    }),
    { numRuns: 200 },
  );
});
