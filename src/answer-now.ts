import type { Eventual } from './eventual.js';
import type { HandleInput, WebhookResponse, Webhooks } from './types.js';

/**
 * The method by which this library's receivers answer without a promise when they can (see
 * {@link answerNow}). A registered symbol: the adapters and the core may be loaded as separate copies.
 */
export const ANSWER_NOW: unique symbol = Symbol.for('service-webhooks.answerNow');

interface AnswersNow {
  [ANSWER_NOW]?: (input: HandleInput) => Eventual<WebhookResponse>;
}

/**
 * @internal For adapters: what `webhooks.handle(input)` answers, but the answer itself when it is
 * known within the call (a synchronous store and synchronous handlers, the memory store's usual case),
 * so that the adapter writes it in the same tick rather than after a promise and a microtask. An
 * object that is not one of this library's receivers (a wrapper, a test double) gets its `handle`.
 * Never throws and never rejects, as `handle`.
 *
 * @example
 * ```ts
 * const answer = answerNow(webhooks, { body, headers, method });
 * if (answer instanceof Promise) answer.then(write);
 * else write(answer);
 * ```
 */
export function answerNow(webhooks: Webhooks, input: HandleInput): Eventual<WebhookResponse> {
  const now = (webhooks as Webhooks & AnswersNow)[ANSWER_NOW];
  return now === undefined ? webhooks.handle(input) : now.call(webhooks, input);
}
