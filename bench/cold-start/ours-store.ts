// The same function as ours.ts on a store the application brings, as a Lambda receiver that deduplicates
// across instances does: `createWebhooks` from service-webhooks/core, so neither MemoryStore nor
// lru-cache is in the bundle. The store is a user-written one over a Map, not the DynamoDB store: a real
// store's client (the AWS SDK, ioredis) and its network round trips would be timed too and would drown
// what this section compares, the library's own cost against octokit's, which has no store at all.
// Lambda's Node runtimes provide the AWS SDK and CDK leaves it out of the bundle by default, so with the
// DynamoDB store the bundle is this one plus the store's own code (the table reports its size too).
import { createWebhooks, type IdempotencyStore } from 'service-webhooks/core';
import { lambdaHandler } from 'service-webhooks/lambda';

interface Entry {
  token: string;
  until: number;
  completed: boolean;
}
const entries = new Map<string, Entry>();

/** Claim, complete and release on one Map: a live entry is in progress until its lease or completed until its TTL. */
const store: IdempotencyStore = {
  async claim(key, token, leaseMs) {
    const entry = entries.get(key);
    if (entry && entry.until > Date.now()) return entry.completed ? 'completed' : 'in_progress';
    entries.set(key, { token, until: Date.now() + leaseMs, completed: false });
    return 'claimed';
  },
  async complete(key, token, ttlMs) {
    const entry = entries.get(key);
    if (entry && entry.until > Date.now() && (entry.completed || entry.token !== token)) return 'lost';
    entries.set(key, { token, until: Date.now() + ttlMs, completed: true });
    return 'completed';
  },
  async release(key, token) {
    const entry = entries.get(key);
    if (entry && !entry.completed && entry.token === token) entries.delete(key);
  },
};

const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store });

webhooks.on('user.created', async () => {});

export const handler = lambdaHandler(webhooks);
