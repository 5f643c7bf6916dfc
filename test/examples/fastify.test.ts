import { expect, test } from 'vitest';
import { deliverToExample } from './run-example.js';

test('examples/fastify: a signed delivery over HTTP runs its handler (built package)', async () => {
  await expect(deliverToExample('examples/fastify/server.ts')).resolves.toBeUndefined();
});
