/**
 * The floor and the hand-written pipeline every figure is a ratio against: what a careful user writes
 * without a library, with the same primitives the library uses (node:crypto key objects, lru-cache).
 */
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { SECRET } from './shared.js';

export type Headers = Readonly<Record<string, string | string[] | undefined>>;

const key = createSecretKey(SECRET, 'utf8');
const PREFIX = 'sha256=';

/** The floor: HMAC with a prepared key object, constant-time compare against the header, JSON.parse. */
export function floorVerifyAndParse(body: Buffer, header: string | string[] | undefined): unknown {
  if (typeof header !== 'string' || header.length !== 71 || !header.startsWith(PREFIX)) return undefined;
  const expected = Buffer.from(header.slice(PREFIX.length), 'hex');
  const digest = createHmac('sha256', key).update(body).digest();
  if (expected.length !== 32 || !timingSafeEqual(digest, expected)) return undefined;
  return JSON.parse(body.toString('utf8'));
}

export type Handler = (event: unknown) => Promise<void>;

/**
 * The dedup a user adds by hand: lru-cache of handled ids, bounded like the MemoryStore, with a day's
 * TTL. Answers whether `id` is new, and remembers it.
 */
export function handWrittenDedup(): (id: string) => boolean {
  const seen = new LRUCache<string, true>({ max: 100_000, ttl: 86_400_000 });
  return (id) => {
    if (seen.has(id)) return false;
    seen.set(id, true);
    return true;
  };
}

/**
 * The floor pipeline: verify, parse, dedup with lru-cache, dispatch by type; answers a status. It
 * has no size limit, no envelope or age check, no lease and no deadlines: it is the floor, not a peer.
 */
export function floorPipeline(handlers: ReadonlyMap<string, Handler>) {
  const isNew = handWrittenDedup();
  return async (body: Buffer, headers: Headers): Promise<number> => {
    let event: { id: string; type: string } | undefined;
    try {
      event = floorVerifyAndParse(body, headers['x-service-signature']) as typeof event;
    } catch {
      return 400;
    }
    if (event === undefined) return 401;
    if (!isNew(event.id)) return 200;
    const handler = handlers.get(event.type);
    if (handler) await handler(event);
    return 200;
  };
}
