/** One byte of a dotted IPv4 address, 0 to 255, as written (no leading zeros beyond one digit). */
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
/** 127.0.0.0/8. */
const IPV4_LOOPBACK = new RegExp(`^127(?:\\.${OCTET}){3}$`);
/** 127.0.0.0/8 mapped into IPv6 as a WHATWG URL writes it: `::ffff:7f00:1` for `::ffff:127.0.0.1`. */
const MAPPED_HEX_LOOPBACK = /^7f[0-9a-f]{2}:[0-9a-f]{1,4}$/;

/**
 * Whether `host` names this machine only: 127.0.0.0/8, `::1` (also written in full, and 127/8 mapped
 * into IPv6), `localhost` and `*.localhost` (RFC 6761). It takes a `--host` value (`::1`) as well as
 * a URL's hostname (`[::1]`, `localhost.`), and answers without a DNS lookup or `node:net`, so
 * `devReporter()` (which may run in an edge runtime) uses it too. The one rule for every local tool:
 * the sandbox's and the dev server's Host guard (on for a loopback bind), the dev command's "not
 * loopback" warning, and devReporter's refusal to send reports (messages, stacks) anywhere else.
 *
 * @example
 * ```ts
 * isLoopbackHost('127.0.0.1'); // true
 * isLoopbackHost('[::ffff:7f00:1]'); // true: new URL('http://[::ffff:127.0.0.1]/').hostname
 * isLoopbackHost('0.0.0.0'); // false: every interface
 * ```
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (IPV4_LOOPBACK.test(bare)) return true;
  if (bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true;
  const mapped = /^(?:::|0:0:0:0:0:)ffff:(.+)$/.exec(bare)?.[1];
  return mapped !== undefined && (IPV4_LOOPBACK.test(mapped) || MAPPED_HEX_LOOPBACK.test(mapped));
}
