import type { DevDelivery } from './api-types.js';

/** A file the page downloads. */
export interface ExportedFile {
  readonly name: string;
  readonly type: string;
  readonly text: string;
}

/** The secret the exported test signs with; the test builds its receiver with it. */
const TEST_SECRET = 'whsec_exported_fixture';

function baseName(delivery: DevDelivery): string {
  return `${delivery.event_type.replace('.', '-')}-${delivery.event_id}`.replace(/[^\w.-]/g, '_');
}

function answerOf(attempt: DevDelivery['attempts'][number]): string {
  if (attempt.status === null) return attempt.error ?? 'no answer';
  const parts = [String(attempt.status)];
  if (attempt.code !== null) parts.push(attempt.code);
  if (attempt.duplicate) parts.push('duplicate');
  if (attempt.stale) parts.push('stale');
  const failure = attempt.receiver?.error?.cause ?? attempt.receiver?.error;
  if (failure !== undefined) parts.push(`(${failure.name}: ${failure.message})`);
  return parts.join(' ');
}

/**
 * The delivery as a fixture: the event's exact body (as the first attempt sent it) and what the
 * receiver answered to each attempt. No signature and no secret: a fixture goes into a repository,
 * and whoever replays it signs it with their test secret.
 */
export function fixtureFile(delivery: DevDelivery): ExportedFile {
  const fixture = {
    description: `${delivery.event_type} ${delivery.event_id}, exported by service-webhooks dev`,
    event: delivery.event,
    body: JSON.stringify({ ...delivery.event, pending_webhooks: 1 }),
    attempts: delivery.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      started_at: attempt.started_at,
      answer: answerOf(attempt),
    })),
  };
  return {
    name: `${baseName(delivery)}.json`,
    type: 'application/json; charset=utf-8',
    text: `${JSON.stringify(fixture, null, 2)}\n`,
  };
}

/**
 * `value` as a JavaScript literal nothing can break out of: JSON, whose strings escape every quote,
 * backslash and control character (so `'`, `` ` ``, `${` and a newline stay text), with U+2028 and
 * U+2029 escaped too: JavaScript ends a line, and a `//` comment, at either. The file is TypeScript, not
 * HTML, so `</script>` needs nothing.
 */
function literal(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(/[\u2028\u2029]/g, (separator) =>
    separator === '\u2028' ? '\\u2028' : '\\u2029',
  );
}

/**
 * The event as an expression that makes the same object: its JSON as an object literal, readable, unless
 * a key is `__proto__`, which an object literal turns into the prototype (JSON.parse keeps it a key).
 */
function eventExpression(event: Record<string, unknown>): string {
  const json = JSON.stringify(event, null, 2);
  return /"__proto__"\s*:/.test(json) ? `JSON.parse(${literal(json)})` : literal(event, 2);
}

/**
 * The delivery as a ready test: it hands the same event, signed, to the receiver through `deliver`
 * from `service-webhooks/testing` (no server, no network) and expects it acknowledged, then
 * recognised as a duplicate. A delivery the receiver failed is a regression test: it fails until the
 * handler is fixed. The one line to adapt is the import of the receiver.
 *
 * Everything in a delivery came from outside this file's author: an edited event's id and type, the
 * receiver's error messages and answer codes. Each is written as a JSON literal ({@link literal}), in
 * code and in comments alike, so none can end a string or a comment and become a statement.
 */
export function testFile(delivery: DevDelivery): ExportedFile {
  const seen = delivery.attempts.map(
    (attempt) => `//   attempt ${literal(attempt.attempt)}: ${literal(answerOf(attempt))}`,
  );
  const event = eventExpression({ ...delivery.event, pending_webhooks: 1 });
  const text = `// A delivery of ${literal(delivery.event_type)} exported by \`service-webhooks dev\`.
// What the receiver answered then:
${seen.length > 0 ? seen.join('\n') : '//   (no attempt yet)'}
import { deliver } from 'service-webhooks/testing';
import { expect, test } from 'vitest';
// Your receiver: a function that builds it (createWebhooks and its handlers) with the secret it is given.
import { createReceiver } from './receiver.js';

const secret = ${literal(TEST_SECRET)};
const event = ${event};

test(${literal(`${delivery.event_type} ${delivery.event_id} is handled once`)}, async () => {
  const webhooks = createReceiver(secret);
  const first = await deliver(webhooks, event, { secret });
  expect(first.status, first.body).toBe(200);
  const again = await deliver(webhooks, event, { secret });
  expect(again.status).toBe(200);
  expect(again.headers['x-webhook-duplicate']).toBe('true');
});
`;
  return { name: `${baseName(delivery)}.test.ts`, type: 'text/plain; charset=utf-8', text };
}
