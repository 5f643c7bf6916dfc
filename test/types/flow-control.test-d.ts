import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Redis } from 'ioredis';
import {
  type FlowControl,
  type FlowGrant,
  type InboxEntry,
  type InboxFlowOptions,
  type InboxStats,
  RateLimitedError,
  rateLimitedError,
  type ThrottleReason,
  type Webhooks,
} from 'service-webhooks';
import { type InboxWorkerOptions, startInboxWorker } from 'service-webhooks/bullmq';
import { type PgBossWorkerOptions, startPgBossWorker } from 'service-webhooks/pg-boss';
import type { PostgresFlowControl, PostgresStore } from 'service-webhooks/postgres';
import { RedisFlowControl, RedisStore } from 'service-webhooks/redis';
import { type SqsWorkerOptions, startSqsWorker } from 'service-webhooks/sqs';
import { describe, expectTypeOf, test } from 'vitest';

declare const webhooks: Webhooks;
declare const redis: Redis;
declare const sqs: SQSClient;

describe('flow control', () => {
  test('every engine takes the same options', () => {
    expectTypeOf<InboxWorkerOptions>().toExtend<InboxFlowOptions>();
    expectTypeOf<PgBossWorkerOptions>().toExtend<InboxFlowOptions>();
    expectTypeOf<SqsWorkerOptions>().toExtend<InboxFlowOptions>();
    startInboxWorker(webhooks, {
      connection: 'redis://127.0.0.1:6379',
      rate: { max: 100, perMs: 3_600_000 },
      concurrencyPerKey: {
        key: (entry) => {
          expectTypeOf(entry).toEqualTypeOf<InboxEntry>();
          return entry.event.type;
        },
        max: 2,
      },
    });
    startSqsWorker(webhooks, {
      client: sqs,
      queueUrl: 'u',
      rate: { max: 1, perMs: 1 },
      flowControl: new RedisStore({ client: redis }),
    });
    startSqsWorker(webhooks, {
      client: sqs,
      queueUrl: 'u',
      rate: { max: 1, perMs: 1 },
      flowControl: new RedisFlowControl({ client: redis }),
    });
    expectTypeOf(startPgBossWorker).returns.resolves.toHaveProperty('stats');
  });

  test('the backends are FlowControls; the stores are sources of one', () => {
    expectTypeOf<RedisFlowControl>().toExtend<FlowControl>();
    expectTypeOf<PostgresFlowControl>().toExtend<FlowControl>();
    expectTypeOf<RedisStore['flowControl']>().returns.toEqualTypeOf<FlowControl>();
    expectTypeOf<PostgresStore['flowControl']>().returns.toEqualTypeOf<FlowControl>();
    expectTypeOf<FlowControl['acquireRate']>().returns.resolves.toEqualTypeOf<FlowGrant>();
  });

  test('a key function must return a string; a rate needs max and perMs', () => {
    // @ts-expect-error a key is a string
    startInboxWorker(webhooks, { connection: 'r', concurrencyPerKey: { key: () => 1, max: 2 } });
    // @ts-expect-error perMs is required
    startInboxWorker(webhooks, { connection: 'r', rate: { max: 2 } });
  });

  test('RateLimitedError and its helper; the figures and the reasons', () => {
    expectTypeOf(new RateLimitedError(1_000).retryAfterMs).toEqualTypeOf<number>();
    expectTypeOf(new RateLimitedError(1_000).code).toEqualTypeOf<
      import('service-webhooks').WebhookErrorCode
    >();
    expectTypeOf(rateLimitedError(new Response())).toEqualTypeOf<RateLimitedError>();
    expectTypeOf(rateLimitedError({ 'retry-after': '5' })).toEqualTypeOf<RateLimitedError>();
    expectTypeOf<InboxStats['throttled']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<InboxStats['rateLimited']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<ThrottleReason>().toEqualTypeOf<'rate' | 'key' | 'downstream' | 'unavailable'>();
  });
});
