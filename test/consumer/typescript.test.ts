/**
 * The built declarations as TypeScript users compile against them, with the repository's TypeScript 5
 * (its devDependency, which tsup's declaration build also uses) and with TypeScript 7 (the native
 * compiler `npm install typescript` now gives, installed here from the registry), in every module
 * resolution mode a consumer may have:
 *
 * - `module`/`moduleResolution` `node16` and `nodenext`: an ESM consumer (.mts) and a CJS one (.cts),
 *   which must get the ESM (.d.ts) and the CJS (.d.cts) declarations respectively;
 * - `moduleResolution: bundler` with `module: esnext` and with `module: preserve`;
 * - `module: commonjs` with `moduleResolution` unset (TypeScript 5 then uses node10, 7 uses bundler);
 * - `moduleResolution: node10` (and its old spelling `node`): TypeScript 5 resolves the root through
 *   `types` and the subpaths through `typesVersions`; TypeScript 7 refuses the option (TS5108).
 *
 * The consumer imports the root, the core (whose `createWebhooks` must refuse a missing `store`) and
 * the subpaths whose declarations need no optional peer's types
 * (fastify, ioredis, @aws-sdk/client-dynamodb and bullmq's do; lambda's needs @types/aws-lambda, which
 * is installed, and node, express and next need @types/node, as any Node project has). It proves
 * something only if it fails when the types are wrong: `event.data.email` must be exactly `string`
 * (not `any`), and a misspelled event name must be refused (`@ts-expect-error`); a control file whose
 * assertion is wrong must fail with exactly that error.
 *
 * The repository's own sources, adapters, tests and dashboard UI are type-checked with TypeScript 7 here
 * too (`npm run typecheck` does it with 5), so that a contributor whose editor runs 7 sees no error CI
 * does not.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { consumerProject } from '../support/consumer-project.js';
import { assertBuilt, repoPath } from '../support/paths.js';

const run = promisify(execFile);

/** What `npm install typescript` installs now: the newest 7.x release (prereleases excluded). */
const TYPESCRIPT_7 = 'typescript@7';
const TS5_BIN = repoPath('node_modules', 'typescript', 'bin', 'tsc');
const TS5_VERSION: string = JSON.parse(
  readFileSync(repoPath('node_modules', 'typescript', 'package.json'), 'utf8'),
).version;
/** The @types the consumer needs, at the versions the repository has (so from the warm npm cache). */
const installedVersion = (name: string): string =>
  JSON.parse(readFileSync(repoPath('node_modules', name, 'package.json'), 'utf8')).version;

/** Subpaths the consumer imports, by the name of their files in dist/. */
const IMPORTED = ['index', 'core', 'testing', 'web', 'node', 'express', 'next', 'lambda', 'postgres'];
const declarations = (extension: '.d.ts' | '.d.cts') => IMPORTED.map((name) => `${name}${extension}`);

const IMPORTS = `import { createWebhooks, WebhookError } from 'service-webhooks';
import { createWebhooks as createOnStore, WebhookError as CoreWebhookError } from 'service-webhooks/core';
import { createTestEvent } from 'service-webhooks/testing';
import { webHandler } from 'service-webhooks/web';
import { nodeHandler } from 'service-webhooks/node';
import { expressWebhooks } from 'service-webhooks/express';
import { nextRouteHandler } from 'service-webhooks/next';
import { lambdaHandler } from 'service-webhooks/lambda';
import { PostgresStore } from 'service-webhooks/postgres';
`;

/** `emailType` is the type `event.data.email` must be exactly; the control file gets it wrong. */
const consumer = (emailType: string) => `${IMPORTS}
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

const webhooks = createWebhooks({ secret: 'whsec_consumer' });
webhooks.on('user.created', (event) => {
  const email = event.data.email;
  const exactly: Equal<typeof email, ${emailType}> = true;
  return exactly;
});
// @ts-expect-error: not an event type the service sends
webhooks.on('user.nonexistent', () => {});

export const handlers = [
  webHandler(webhooks),
  nodeHandler(webhooks),
  expressWebhooks(webhooks),
  nextRouteHandler(webhooks),
  lambdaHandler(webhooks),
];
export const event = createTestEvent('user.created');
export const store = new PostgresStore({ pool: { query: async () => ({ rows: [], rowCount: 0 }) } });

// service-webhooks/core: the same types, and a createWebhooks that needs a store.
export const onStore = createOnStore({ secret: 'whsec_consumer', store });
// @ts-expect-error: \`store\` is required by the core's createWebhooks
createOnStore({ secret: 'whsec_consumer' });
export const handlersOnStore = [lambdaHandler(onStore), webHandler(onStore)];
const sameClass: Equal<typeof WebhookError, typeof CoreWebhookError> = true;
export { sameClass };
`;

interface Configuration {
  name: string;
  compilerOptions: Record<string, unknown>;
  files: string[];
  /** The dist/ files the compiler must load: what this mode resolves the imports to. */
  resolves: string[];
}

const CONFIGURATIONS: Configuration[] = [
  {
    name: 'module node16, ESM (.mts) and CJS (.cts) consumers',
    compilerOptions: { module: 'node16', moduleResolution: 'node16' },
    files: ['esm.mts', 'cjs.cts'],
    resolves: [...declarations('.d.ts'), ...declarations('.d.cts')],
  },
  {
    // The one configuration that also type-checks the declaration files themselves (skipLibCheck off):
    // it loads every .d.ts and .d.cts the others load.
    name: 'module nodenext, ESM (.mts) and CJS (.cts) consumers, skipLibCheck off',
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', skipLibCheck: false },
    files: ['esm.mts', 'cjs.cts'],
    resolves: [...declarations('.d.ts'), ...declarations('.d.cts')],
  },
  {
    name: 'moduleResolution bundler, module esnext',
    compilerOptions: { module: 'esnext', moduleResolution: 'bundler' },
    files: ['consumer.ts'],
    resolves: declarations('.d.ts'),
  },
  {
    name: 'moduleResolution bundler, module preserve',
    compilerOptions: { module: 'preserve', moduleResolution: 'bundler' },
    files: ['consumer.ts'],
    resolves: declarations('.d.ts'),
  },
  {
    name: 'module commonjs, moduleResolution unset',
    compilerOptions: { module: 'commonjs' },
    files: ['consumer.ts'],
    resolves: declarations('.d.cts'),
  },
];

const NODE10: Configuration = {
  name: 'moduleResolution node10, module commonjs',
  compilerOptions: { module: 'commonjs', moduleResolution: 'node10' },
  files: ['consumer.ts'],
  resolves: declarations('.d.cts'),
};

let project: string;
let ts7Bin: string;
let ts7Version: string;

async function writeConfig(name: string, compilerOptions: Record<string, unknown>, files: string[]) {
  const config = {
    compilerOptions: {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: 'es2022',
      types: ['node', 'aws-lambda'],
      ...compilerOptions,
    },
    files,
  };
  const file = `tsconfig.${name.replace(/[^a-z0-9]+/gi, '-')}.json`;
  await writeFile(join(project, file), JSON.stringify(config, null, 2));
  return file;
}

/** Run a compiler on a tsconfig; its exit code, what it printed, and the dist/ files it loaded. */
async function typecheck(bin: string, config: string) {
  const { code, stdout, stderr } = await run(process.execPath, [bin, '-p', config, '--listFiles'], {
    cwd: project,
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code ?? -1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
  const lines = stdout.split('\n');
  // The compilers print paths with forward slashes on every platform.
  const dist = 'node_modules/service-webhooks/dist/';
  return {
    code,
    diagnostics: [...lines.filter((line) => /error TS\d+/.test(line)), stderr.trim()].filter(Boolean),
    loaded: lines
      .filter((line) => line.includes(dist))
      .map((line) => line.slice(line.indexOf(dist) + dist.length))
      .sort(),
  };
}

/** The configuration compiles without a diagnostic, loading exactly the declarations it should. */
async function expectCompiles(bin: string, configuration: Configuration): Promise<void> {
  const config = await writeConfig(configuration.name, configuration.compilerOptions, configuration.files);
  const result = await typecheck(bin, config);
  expect(result.diagnostics, config).toEqual([]);
  expect(result.code).toBe(0);
  expect(result.loaded).toEqual([...configuration.resolves].sort());
}

beforeAll(async () => {
  assertBuilt('index.d.ts', 'index.d.cts');
  project = await consumerProject('typescript', [
    TYPESCRIPT_7,
    `@types/node@${installedVersion('@types/node')}`,
    `@types/aws-lambda@${installedVersion('@types/aws-lambda')}`,
  ]);
  const ts7 = JSON.parse(await readFile(join(project, 'node_modules', 'typescript', 'package.json'), 'utf8'));
  ts7Version = ts7.version;
  ts7Bin = join(project, 'node_modules', 'typescript', typeof ts7.bin === 'string' ? ts7.bin : ts7.bin.tsc);
  await writeFile(join(project, 'esm.mts'), consumer('string'));
  await writeFile(join(project, 'cjs.cts'), consumer('string'));
  await writeFile(join(project, 'consumer.ts'), consumer('string'));
  await writeFile(join(project, 'control.ts'), consumer('string | undefined'));
  console.info(
    `[consumer types] TypeScript ${TS5_VERSION} (the repository's devDependency) and ${ts7Version} (${TYPESCRIPT_7} from the registry)`,
  );
}, 120_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

const COMPILERS = [
  { label: 'TypeScript 5', bin: () => TS5_BIN, version: () => TS5_VERSION, major: '5' },
  { label: 'TypeScript 7', bin: () => ts7Bin, version: () => ts7Version, major: '7' },
];

for (const compiler of COMPILERS) {
  describe(compiler.label, () => {
    test('is the major version this file is about', async () => {
      expect(compiler.version().split('.')[0]).toBe(compiler.major);
      const { stdout } = await run(process.execPath, [compiler.bin(), '--version']);
      expect(stdout.trim()).toBe(`Version ${compiler.version()}`);
    });

    for (const configuration of CONFIGURATIONS) {
      test(`${configuration.name}: compiles, resolving the declarations it should`, async () => {
        await expectCompiles(compiler.bin(), configuration);
      }, 30_000);
    }

    test('control: a wrong type assertion fails, with that error alone', async () => {
      const config = await writeConfig('control', { module: 'esnext', moduleResolution: 'bundler' }, [
        'control.ts',
      ]);
      const result = await typecheck(compiler.bin(), config);
      expect(result.code).not.toBe(0);
      expect(result.diagnostics).toHaveLength(1);
      expect(result.diagnostics[0]).toMatch(
        /^control\.ts\(\d+,\d+\): error TS2322: Type 'true' is not assignable to type 'false'\.$/,
      );
    }, 30_000);

    if (compiler.major === '5') {
      test(`${NODE10.name}: compiles, through types and typesVersions`, async () => {
        await expectCompiles(compiler.bin(), NODE10);
      }, 30_000);
    } else {
      test('the repository itself (src, adapters, tests, the dashboard UI) type-checks, as npm run typecheck does with 5', async () => {
        for (const config of [
          repoPath('tsconfig.json'),
          repoPath('src', 'dashboard', 'ui', 'tsconfig.json'),
        ]) {
          const result = await run(process.execPath, [compiler.bin(), '--noEmit', '-p', config], {
            cwd: repoPath(),
            maxBuffer: 16 * 1024 * 1024,
          }).then(
            ({ stdout }) => ({ code: 0, output: stdout.trim() }),
            (error: { code?: number; stdout?: string; stderr?: string }) => ({
              code: error.code ?? -1,
              output: `${error.stdout ?? ''}${error.stderr ?? ''}`.trim(),
            }),
          );
          expect(result, config).toEqual({ code: 0, output: '' });
        }
      }, 60_000);

      for (const spelling of ['node10', 'node']) {
        test(`moduleResolution ${spelling} is refused (TS5108)`, async () => {
          const config = await writeConfig(
            `refused-${spelling}`,
            { ...NODE10.compilerOptions, moduleResolution: spelling },
            NODE10.files,
          );
          const result = await typecheck(compiler.bin(), config);
          expect(result.code).not.toBe(0);
          expect(result.diagnostics).toEqual([
            expect.stringContaining(
              "error TS5108: Option 'moduleResolution=node10' has been removed. Please remove it from your configuration.",
            ),
          ]);
        }, 30_000);
      }
    }
  });
}
