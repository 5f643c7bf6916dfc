import { defineConfig, type Options } from 'tsup';
import { tsupEntries } from './subpaths.mjs';

/**
 * One bundle per public subpath, from subpaths.mjs (the one list of them). Every subpath other than the
 * root imports the core by its package name, kept external here, so ESM and CJS consumers each load
 * exactly one copy of the core: error classes stay `instanceof`-comparable across `service-webhooks/*`
 * imports.
 */
export const entries = tsupEntries();

const shared: Options = {
  target: 'node20',
  sourcemap: false,
  splitting: false,
  treeshake: true,
  external: [/^service-webhooks(\/.*)?$/, /^node:/],
};

export default defineConfig([
  {
    ...shared,
    entry: entries,
    format: ['esm', 'cjs'],
    dts: true,
    platform: 'neutral',
    // The CJS files load optional peers (the DynamoDB SDK) with require() rather than import(), which
    // CommonJS test runners such as Jest refuse without --experimental-vm-modules.
    esbuildOptions(options, { format }) {
      if (format === 'cjs') options.supported = { ...options.supported, 'dynamic-import': false };
    },
  },
  // The `service-webhooks` bin: run, never imported, so ESM with no declarations. What it loads only on
  // demand (the MCP endpoint of `dev`, with the MCP SDK and zod bundled in: about 950 KB) is split into
  // dist/cli-chunks/, so every other command starts as fast as before and no user installs the SDK.
  {
    ...shared,
    entry: { cli: 'src/cli/main.ts' },
    format: ['esm'],
    dts: false,
    platform: 'node',
    splitting: true,
    esbuildOptions(options) {
      options.chunkNames = 'cli-chunks/[name]-[hash]';
    },
  },
]);
