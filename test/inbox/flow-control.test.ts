/**
 * Flow control on BullMQ, with its real backend: the rate and the per-key slots kept in the queue's
 * own Redis (a Lua script on the worker's connection), every worker in this process on its own
 * connection (see test/support/flow-control-scenarios.ts for what each scenario proves).
 */

import { Queue } from 'bullmq';
import { bullmqInbox, startInboxWorker } from 'service-webhooks/bullmq';
import { afterAll, beforeAll, describe } from 'vitest';
import { flowControlScenarios } from '../support/flow-control-scenarios.js';
import { RedisServer } from '../support/redis-servers.js';
import { uniqueName } from './support.js';

let redis: RedisServer;

beforeAll(async () => {
  redis = await RedisServer.start();
});

afterAll(async () => {
  await redis?.destroy();
});

describe('BullMQ', () => {
  flowControlScenarios('BullMQ', async () => {
    const queueName = uniqueName('flow');
    const inbox = bullmqInbox({ connection: redis.url, queueName });
    return {
      inbox,
      countsThrottled: true,
      async startWorker(webhooks, options) {
        const worker = startInboxWorker(webhooks, {
          connection: redis.url,
          queueName,
          monitor: false,
          keepCompleted: 0,
          ...options,
        });
        await worker.waitUntilReady();
        return worker;
      },
      async close() {
        const raw = new Queue(queueName, { connection: { url: redis.url } });
        await raw.obliterate({ force: true });
        await raw.close();
        await inbox.close();
      },
    };
  });
});
