/**
 * The seed of the store checker's runs in CI: a new one each run, so each run checks new histories (a
 * failure prints the seed it used); STORE_CHECK_SEED=<n> pins it, to replay a failure locally.
 */
export function storeCheckSeed(): number | undefined {
  const pinned = process.env.STORE_CHECK_SEED;
  if (pinned === undefined || pinned === '') return undefined;
  const seed = Number(pinned);
  if (!Number.isSafeInteger(seed)) throw new Error(`STORE_CHECK_SEED must be an integer; got ${pinned}`);
  return seed;
}
