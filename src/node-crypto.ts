import type * as NodeCrypto from 'node:crypto';

/**
 * node:crypto where the runtime has it (Node >= 20.16, Bun, Deno), reached without a static `node:`
 * import so that the same core bundles for edge runtimes, where this is `undefined` and Web Crypto is
 * used instead.
 */
export const nodeCrypto: typeof NodeCrypto | undefined = loadNodeCrypto();

function loadNodeCrypto(): typeof NodeCrypto | undefined {
  try {
    return (
      globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
    ).process?.getBuiltinModule?.('node:crypto') as typeof NodeCrypto | undefined;
  } catch {
    // Next.js's Edge sandbox throws on any Node.js API it lacks ("A Node.js API is used
    // (process.getBuiltinModule) which is not supported in the Edge Runtime") instead of leaving it
    // undefined; that runtime has Web Crypto.
    return undefined;
  }
}
