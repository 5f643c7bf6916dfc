import type * as NodeBuffer from 'node:buffer';
import type * as NodeCrypto from 'node:crypto';

/**
 * Node.js built-in modules where the runtime has them (Node >= 20.16, Bun, Deno), reached without a
 * static `node:` import so that the same core bundles for edge runtimes, where these are `undefined`
 * and Web APIs are used instead.
 */
function loadBuiltin<T>(id: string): T | undefined {
  try {
    return (
      globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
    ).process?.getBuiltinModule?.(id) as T | undefined;
  } catch {
    // Next.js's Edge sandbox throws on any Node.js API it lacks ("A Node.js API is used
    // (process.getBuiltinModule) which is not supported in the Edge Runtime") instead of leaving it
    // undefined; that runtime has the Web APIs.
    return undefined;
  }
}

/** node:crypto, or `undefined` where Web Crypto must do. */
export const nodeCrypto: typeof NodeCrypto | undefined = loadBuiltin('node:crypto');

/** node:buffer's native UTF-8 validation, or `undefined` where a fatal TextDecoder must do. */
export const isUtf8: typeof NodeBuffer.isUtf8 | undefined =
  loadBuiltin<typeof NodeBuffer>('node:buffer')?.isUtf8;
