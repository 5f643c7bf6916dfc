/**
 * The public subpaths of service-webhooks: the ONE list. Each name is a subpath (`service-webhooks/<name>`;
 * `index` is the root, `service-webhooks`) and a bundle in dist/ (`dist/<name>.js`, `.cjs`, `.d.ts`,
 * `.d.cts`); each value is the source file it is built from.
 *
 * Read by tsup.config.ts (what to bundle) and vitest.config.ts (tests import the package by name, as users
 * do, and these aliases point the names at the sources). `npm run sync:subpaths` writes the rest from it:
 * package.json `exports` and `typesVersions`, tsconfig.json `paths`; test/subpaths.test.ts (unit tier)
 * fails while they are out of step. Plain JavaScript, so that the sync script runs on plain node.
 */
export const subpaths = Object.freeze({
  index: 'src/index.ts',
  core: 'src/core.ts',
  testing: 'src/testing/index.ts',
  node: 'adapters/node.ts',
  express: 'adapters/express.ts',
  fastify: 'adapters/fastify.ts',
  web: 'adapters/web.ts',
  next: 'adapters/next.ts',
  lambda: 'adapters/lambda.ts',
  redis: 'src/stores/redis-store.ts',
  dynamodb: 'src/stores/dynamodb-store.ts',
  postgres: 'src/stores/postgres-store.ts',
  bullmq: 'src/bullmq/index.ts',
  sqs: 'src/sqs/index.ts',
  'pg-boss': 'src/pg-boss/index.ts',
  rabbitmq: 'src/rabbitmq/index.ts',
  nats: 'src/nats/index.ts',
  opentelemetry: 'src/opentelemetry/index.ts',
  schemas: 'src/schemas/index.ts',
  dev: 'src/dev/index.ts',
});

export const PACKAGE_NAME = 'service-webhooks';

/** The name a user imports: `service-webhooks` for `index`, else `service-webhooks/<name>`. */
export function specifier(name) {
  return name === 'index' ? PACKAGE_NAME : `${PACKAGE_NAME}/${name}`;
}

/** package.json `exports`: each subpath's ESM and CJS files with their declarations, then package.json. */
export function packageExports() {
  const entries = Object.keys(subpaths).map((name) => [
    name === 'index' ? '.' : `./${name}`,
    {
      import: { types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` },
      require: { types: `./dist/${name}.d.cts`, default: `./dist/${name}.cjs` },
    },
  ]);
  return Object.fromEntries([...entries, ['./package.json', './package.json']]);
}

/**
 * package.json `typesVersions`: for TypeScript's `moduleResolution: node` (node10), which ignores
 * `exports`; the root needs none (`types` covers it).
 */
export function packageTypesVersions() {
  const entries = Object.keys(subpaths)
    .filter((name) => name !== 'index')
    .map((name) => [name, [`./dist/${name}.d.cts`]]);
  return { '*': Object.fromEntries(entries) };
}

/** tsconfig.json `paths`: the package names to the sources, for tsc, tsx and the editors. */
export function tsconfigPaths() {
  return Object.fromEntries(
    Object.entries(subpaths).map(([name, source]) => [specifier(name), [`./${source}`]]),
  );
}

/** tsup's `entry`: one bundle per subpath, named as in dist/. */
export function tsupEntries() {
  return { ...subpaths };
}

/**
 * Vite's `resolve.alias` (vitest): each package name to its source under `root` (an absolute path
 * ending in a separator). The longer names come first: an alias also matches names that start with it.
 */
export function vitestAliases(root) {
  const entries = Object.entries(subpaths).map(([name, source]) => [specifier(name), `${root}${source}`]);
  return Object.fromEntries(entries.sort(([a], [b]) => b.length - a.length));
}
