import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

/** `npm start` runs this demo on the built package; here it runs the same way, so it can never rot. */
test('the demo prints the answer to each of its deliveries', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['examples/demo/demo.mjs'], {
    timeout: 30_000,
  });
  const status = (label: string) =>
    stdout
      .split('\n')
      .find((line) => line.startsWith(label))
      ?.split('->')[1]
      ?.trim();
  expect(status('1. valid event')).toMatch(/^200 handled .*: 1$/);
  expect(status('2. the same event again')).toMatch(/^200 duplicate .*: 1$/);
  const racing = stdout
    .split('\n')
    .filter((line) => line.startsWith('3.'))
    .map((line) => line.split('->')[1]?.trim());
  expect(racing.filter((line) => /^200 handled/.test(line ?? ''))).toHaveLength(1);
  expect(racing.filter((line) => /^(409 event_in_progress|200 duplicate)/.test(line ?? ''))).toHaveLength(1);
  expect(status('4. forged signature')).toMatch(/^401 invalid_signature .*: 0$/);
  expect(status('5. handler fails')).toMatch(/^500 handler_failed .*: 1$/);
  expect(status('5. the service retries')).toMatch(/^200 handled .*: 2$/);
  expect(status('5. and once more')).toMatch(/^200 duplicate .*: 2$/);
});
