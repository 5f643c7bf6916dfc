/**
 * Section 3b, run with --expose-gc in its own process: heap (and typed-array backing stores) per event
 * id remembered by MemoryStore after 100,000 completed deliveries, measured from before the store was
 * built, so whatever it reserves up front counts too. A bare lru-cache of the same ids is the floor.
 * Prints JSON.
 */
import { LRUCache } from 'lru-cache';
import { MemoryStore } from 'service-webhooks';
import { eventId, runNonce } from './shared.js';

const COUNT = 100_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('Run with --expose-gc.');

function used(): number {
  gc?.();
  gc?.();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** Ids as the core gets them: flat strings out of JSON.parse, made after the first reading. */
function* ids(): Generator<string> {
  const nonce = runNonce();
  for (let n = 0; n < COUNT; n++) yield JSON.parse(`"${eventId(nonce, n)}"`) as string;
}

async function memoryStore(): Promise<number> {
  const before = used();
  const store = new MemoryStore({ maxEvents: COUNT });
  for (const id of ids()) {
    const token = crypto.randomUUID();
    await store.claim(id, token, 45_000);
    await store.complete(id, token, 86_400_000);
  }
  const after = used();
  if (store.size !== COUNT) throw new Error(`The store remembers ${store.size} ids.`);
  return (after - before) / COUNT;
}

function bareLru(): number {
  const before = used();
  const cache = new LRUCache<string, true>({ max: COUNT, ttl: 86_400_000 });
  for (const id of ids()) cache.set(id, true);
  const after = used();
  if (cache.size !== COUNT) throw new Error(`The cache holds ${cache.size} ids.`);
  return (after - before) / COUNT;
}

const store = await memoryStore();
const lru = bareLru();
process.stdout.write(
  `${JSON.stringify({ count: COUNT, idLength: eventId('0000', 0).length, store, lru })}\n`,
);
