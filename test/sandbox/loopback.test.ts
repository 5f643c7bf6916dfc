/**
 * One answer to "is this host loopback" for every local tool: the sandbox's and the dev server's
 * Host guard (on for a loopback bind), the dev command's "not loopback" warning and devReporter's
 * refusal to post reports elsewhere. Before, each had its own list: `--host 127.0.0.2` or `[::1]`
 * warned "not loopback", and a sandbox bound to `::ffff:127.0.0.1` left its Host guard off.
 */
import { describe, expect, test } from 'vitest';
import { isLoopbackHost } from '../../src/sandbox/loopback.js';

describe('isLoopbackHost', () => {
  test.each([
    '127.0.0.1',
    '127.1.2.3',
    'localhost',
    'LOCALHOST',
    'localhost.',
    'dash.localhost',
    '::1',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    '::ffff:127.0.0.1',
    // How a WHATWG URL writes ::ffff:127.0.0.1 as a hostname.
    '[::ffff:7f00:1]',
  ])('%s is loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  test.each([
    '0.0.0.0',
    '::',
    '',
    '192.168.1.5',
    '128.0.0.1',
    '127.0.0.256',
    '127.0.0',
    'localhost.example.com',
    'evil-localhost',
    '::2',
    '::ffff:10.0.0.1',
    '[::ffff:a00:1]',
  ])('%s is not loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});
