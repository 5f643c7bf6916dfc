import { expect, test } from 'vitest';
import { deliverToExample } from './run-example.js';

test('examples/express: a signed delivery over HTTP runs its handler (built package)', async () => {
  await expect(deliverToExample('examples/express/server.ts')).resolves.toBeUndefined();
});
