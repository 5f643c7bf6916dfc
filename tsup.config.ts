import { defineConfig, type Options } from 'tsup';

/**
 * One bundle per public subpath. Every subpath other than the root imports the core by its package
 * name, kept external here, so ESM and CJS consumers each load exactly one copy of the core: error
 * classes stay `instanceof`-comparable across `service-webhooks/*` imports.
 */
export const entries = {
  index: 'src/index.ts',
  testing: 'src/testing/index.ts',
  node: 'adapters/node.ts',
  express: 'adapters/express.ts',
  fastify: 'adapters/fastify.ts',
  web: 'adapters/web.ts',
  next: 'adapters/next.ts',
  lambda: 'adapters/lambda.ts',
  redis: 'src/redis-store.ts',
};

const shared: Options = {
  target: 'node20',
  sourcemap: false,
  splitting: false,
  treeshake: true,
  external: [/^service-webhooks(\/.*)?$/, /^node:/],
};

export default defineConfig([
  { ...shared, entry: entries, format: ['esm', 'cjs'], dts: true, platform: 'neutral' },
  // The `service-webhooks` bin: run, never imported, so one ESM file with no declarations.
  { ...shared, entry: { cli: 'src/cli/main.ts' }, format: ['esm'], dts: false, platform: 'node' },
]);
