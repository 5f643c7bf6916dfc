/**
 * EVENT_TYPES (src/event-types.ts) lists every key of WebhookEventMap (src/types.ts), nothing else, each
 * once. An event type added to the map but not to the list, or the other way round, fails to compile
 * here (`npm test`'s type tests, and `npm run typecheck`), not at run time in a receiver that never
 * routes it.
 */
import type { EVENT_TYPES, WebhookEventMap, WebhookEventName } from 'service-webhooks';
import { describe, expectTypeOf, test } from 'vitest';

type Listed = (typeof EVENT_TYPES)[number];

/** `true` when no element of the tuple `List` appears twice. */
type Unique<List extends readonly unknown[], Seen = never> = List extends readonly [infer Head, ...infer Rest]
  ? [Head] extends [Seen]
    ? false
    : Unique<Rest, Seen | Head>
  : true;

describe('EVENT_TYPES is exactly the keys of WebhookEventMap', () => {
  test('every key of WebhookEventMap is listed, and nothing else', () => {
    expectTypeOf<Listed>().toEqualTypeOf<keyof WebhookEventMap>();
    expectTypeOf<Listed>().toEqualTypeOf<WebhookEventName>();
  });

  test('each type is listed once, in a tuple whose length is known', () => {
    expectTypeOf<Unique<typeof EVENT_TYPES>>().toEqualTypeOf<true>();
    expectTypeOf<(typeof EVENT_TYPES)['length']>().not.toEqualTypeOf<number>();
  });

  test('the checks bite: a list missing a key, with an extra one, or with a repeat does not pass', () => {
    expectTypeOf<Exclude<Listed, 'payment.refunded'>>().not.toEqualTypeOf<keyof WebhookEventMap>();
    expectTypeOf<Listed | 'payment.disputed'>().not.toEqualTypeOf<keyof WebhookEventMap>();
    expectTypeOf<Unique<readonly ['user.created', 'user.deleted', 'user.created']>>().toEqualTypeOf<false>();
  });
});
