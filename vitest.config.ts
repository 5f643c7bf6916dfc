import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** Tests import the package by name, as users do; the aliases point those names at the sources. */
export const packageAliases = {
  'service-webhooks/testing': here('./src/testing/index.ts'),
  'service-webhooks/node': here('./adapters/node.ts'),
  'service-webhooks/express': here('./adapters/express.ts'),
  'service-webhooks/fastify': here('./adapters/fastify.ts'),
  'service-webhooks/web': here('./adapters/web.ts'),
  'service-webhooks/next': here('./adapters/next.ts'),
  'service-webhooks/lambda': here('./adapters/lambda.ts'),
  'service-webhooks/redis': here('./src/redis-store.ts'),
  'service-webhooks/dynamodb': here('./src/dynamodb-store.ts'),
  'service-webhooks/postgres': here('./src/postgres-store.ts'),
  'service-webhooks': here('./src/index.ts'),
};

export default defineConfig({
  resolve: { alias: packageAliases },
  test: {
    include: ['test/**/*.test.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
    testTimeout: 20_000,
    hookTimeout: 120_000,
  },
});
