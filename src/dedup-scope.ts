import { nodeCrypto } from './node-builtins.js';
import { toBytes } from './raw-body.js';
import { importKey, toHex } from './signature.js';
import type { IdempotencyStore } from './types.js';

/**
 * What the fingerprint of a secret is computed over. Fixed: changing it changes every default scope,
 * and a retry across the upgrade would run again.
 */
const FINGERPRINT_LABEL = 'service-webhooks dedup scope v1';
/** 16 hex digits (64 bits): two registrations' secrets collide with odds of 1 in 2^64. */
const FINGERPRINT_HEX_DIGITS = 16;

/**
 * The key prefixes of one receiver's dedup scope: an event is remembered under `prefix + event id`.
 *
 * - `namespace` given: one prefix, `namespace:` (or none for `''`: the event id alone, for a store that serves one registration).
 * - Left out: one prefix per secret, `#` and a one-way fingerprint of it. Several secrets mean a
 *   rotation of one registration's secret, so a delivery is claimed under every one of them: a retry
 *   that the sender signs with the new secret finds the record the old one left. The `#` keeps derived
 *   prefixes apart from every namespace, which cannot contain it.
 *
 * Why the secret: it is the one thing a receiver has that belongs to its registration alone and is
 * the same in every process serving it. Two registrations that share a secret need a namespace each.
 * The fingerprint is an HMAC keyed with the secret: it reveals no more about the secret than any
 * signed delivery does. Node answers synchronously; Web Crypto (edge runtimes) asynchronously.
 */
export function dedupPrefixes(
  namespace: string | undefined,
  secrets: readonly string[],
): readonly string[] | Promise<readonly string[]> {
  if (namespace !== undefined) return Object.freeze([namespace === '' ? '' : `${namespace}:`]);
  const distinct = [...new Set(secrets)];
  const crypto = nodeCrypto;
  if (crypto) {
    return Object.freeze(
      distinct.map((secret) =>
        toPrefix(crypto.createHmac('sha256', secret).update(FINGERPRINT_LABEL).digest('hex')),
      ),
    );
  }
  return Promise.all(distinct.map(webFingerprint)).then((hex) => Object.freeze(hex.map(toPrefix)));
}

/**
 * The longest tenant id a receiver with `tenant` takes, percent-encoded: with a namespace (65) and an
 * event id it keeps a store key well within the 400 characters stores are promised.
 */
export const MAX_TENANT_KEY_LENGTH = 128;

/**
 * A tenant's part of a store key: `@`, the id percent-encoded (so it holds no `:` and two ids never
 * meet: `a:b` + `c` and `a` + `b:c` stay apart), and `:`. `undefined` for an id too long to key.
 */
export function tenantKeyPart(tenant: string): string | undefined {
  const encoded = encodeURIComponent(tenant);
  return encoded.length > MAX_TENANT_KEY_LENGTH ? undefined : `@${encoded}:`;
}

/**
 * Whether `value` can name a tenant: a non-empty string that {@link tenantKeyPart} can key (what a
 * door writes into an entry, and all a worker takes from one).
 */
export function isTenantId(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && tenantKeyPart(value) !== undefined;
}

/**
 * A tenant's dedup scope: every prefix of the receiver's scope (its namespace, or one per secret of
 * the tenant) followed by the tenant's part, so the same event id under two tenants is two records,
 * even when the tenants share a secret. Never begins with `!`, the inbox runs' mark.
 */
export function tenantPrefixes(
  prefixes: readonly string[] | Promise<readonly string[]>,
  tenantPart: string,
): readonly string[] | Promise<readonly string[]> {
  const scoped = (known: readonly string[]) => Object.freeze(known.map((prefix) => prefix + tenantPart));
  return prefixes instanceof Promise ? prefixes.then(scoped) : scoped(prefixes);
}

function toPrefix(hexDigest: string): string {
  return `#${hexDigest.slice(0, FINGERPRINT_HEX_DIGITS)}:`;
}

async function webFingerprint(secret: string): Promise<string> {
  const key = await importKey(secret);
  return toHex(
    new Uint8Array(
      await crypto.subtle.sign('HMAC', key, toBytes(FINGERPRINT_LABEL) as Uint8Array<ArrayBuffer>),
    ),
  );
}

/** The scopes each store instance serves in this process, to spot two receivers sharing one by accident. */
const scopesByStore = new WeakMap<IdempotencyStore, Set<string>>();

/**
 * Warn once when a second receiver in this process uses the same store with the same derived (or
 * unscoped) scope: if the two serve different registrations that share a secret, each would drop the
 * other's events as duplicates. An explicit namespace says the user meant it, so it is never warned
 * about. Only this process can be seen; the docs' "Several registrations" recipe says what holds across processes.
 */
export function noteSharedScope(
  store: IdempotencyStore,
  namespace: string | undefined,
  prefixes: readonly string[],
): void {
  if (namespace !== undefined && namespace !== '') return;
  let scopes = scopesByStore.get(store);
  if (!scopes) {
    scopes = new Set();
    scopesByStore.set(store, scopes);
  }
  const shared = prefixes.some((prefix) => scopes.has(prefix));
  for (const prefix of prefixes) scopes.add(prefix);
  if (!shared) return;
  // The two warnings differ only in what the receivers share and in the way out.
  const unscoped = namespace === '';
  console.warn(
    `[service-webhooks] Two receivers share one store ${unscoped ? "with namespace '' (unscoped keys)" : 'and one secret'}: if they serve different webhook registrations, each will drop the other's events as duplicates. Give each registration's receiver its own \`namespace\`${unscoped ? '.' : ' (or its own secret).'}`,
  );
}
