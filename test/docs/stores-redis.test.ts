/**
 * docs/stores/redis.md's local recipe, run as a reader runs it (in a project made as Getting started says,
 * with the page's install, the packed build for service-webhooks; saved and run as the page says), against the Redis
 * on 127.0.0.1:6379 under a key prefix of its own (parallel CI runs never share keys). The page
 * promises: the handler runs once, the same event again is a duplicate, and the event's key is in
 * Redis under the prefix, with a TTL.
 */
import { Redis } from 'ioredis';
import { expect, test } from 'vitest';
import {
  commandOnPage,
  docBlock,
  expectHandledOnceThenDuplicate,
  gettingStartedProject,
  installBlock,
} from './support.js';

const PAGE = 'docs/stores/redis.md';

const REDIS_URL = 'redis://127.0.0.1:6379';

test('the Redis recipe handles the event once, then answers it as a duplicate', async () => {
  const prefix = `docs-stores-${crypto.randomUUID().slice(0, 8)}:`;
  const redis = new Redis(REDIS_URL);
  const project = await gettingStartedProject('stores-redis', installBlock(PAGE));
  try {
    project.save(docBlock(PAGE, 'redis-local'), 'redis-local.ts');
    const { stdout, stderr } = await project.shell(commandOnPage(PAGE, 'npx tsx redis-local.ts'), {
      REDIS_URL,
      STORE_PREFIX: prefix,
    });
    expect(stderr).toBe('');
    const eventId = expectHandledOnceThenDuplicate(stdout);
    const keys = await redis.keys(`${prefix}*`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toContain(eventId);
    // Remembered for dedupTtlSeconds (24 h), or a little longer while the event would still pass the
    // age check (plus a clock margin): a TTL, never a key kept forever.
    const ttl = await redis.pttl(keys[0]!);
    expect(ttl).toBeGreaterThan(23 * 60 * 60 * 1000);
    expect(ttl).toBeLessThanOrEqual(24 * 60 * 60 * 1000 + 60_000);
  } finally {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    project.remove();
  }
}, 180_000);
