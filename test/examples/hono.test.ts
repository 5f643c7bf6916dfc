import { expect, test } from 'vitest';
import { deliverToExample } from './run-example.js';

test('examples/hono: a signed delivery over HTTP runs its handler (built package)', async () => {
  await expect(deliverToExample('examples/hono/server.ts')).resolves.toBeUndefined();
});
