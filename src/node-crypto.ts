import type * as NodeCrypto from 'node:crypto';

/**
 * node:crypto where the runtime has it (Node >= 20.16, Bun, Deno), reached without a static `node:`
 * import so that the same core bundles for edge runtimes, where this is `undefined` and Web Crypto is
 * used instead.
 */
export const nodeCrypto: typeof NodeCrypto | undefined = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as typeof NodeCrypto | undefined;
