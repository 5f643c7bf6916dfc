/** The rules of the inbox contract, and the error that names the one an engine broke. */

/**
 * The rules `inboxConformanceSuite` checks, by name: each test checks one, and an
 * {@link InboxConformanceError} says which it found broken.
 *
 * @example
 * ```ts
 * if (error instanceof InboxConformanceError) console.log(INBOX_RULES[error.rule]);
 * ```
 */
export const INBOX_RULES = Object.freeze({
  durable: 'acknowledged only once durable',
  dedupe: 'a second enqueue of one key adds nothing',
  exactlyOnce: 'delivered at least once, completed exactly once',
  crash: 'a crashed worker is recovered without spending an attempt',
  schedule: 'retries follow the schedule',
  deadLetter: 'the last failure dead-letters with its cause',
  replay: 'a replay runs once, a twice-replayed one too',
  poison: 'poison entries are dead-lettered at once',
  admin: 'a dead letter can be got and removed',
  forged: 'a forged entry never runs a handler',
  tenant: 'a tenant’s entry keeps its tenant',
});

/**
 * One rule of the inbox contract (a key of {@link INBOX_RULES}).
 *
 * @example
 * ```ts
 * const rule: InboxRule = 'crash';
 * ```
 */
export type InboxRule = keyof typeof INBOX_RULES;

/**
 * An engine broke a rule of the inbox contract: `rule` names it, the message says what was seen.
 *
 * @example
 * ```ts
 * try { await test.body(); } catch (error) { if (error instanceof InboxConformanceError) broken.add(error.rule); }
 * ```
 */
export class InboxConformanceError extends Error {
  override name = 'InboxConformanceError';
  readonly code = 'inbox_nonconformance';
  readonly rule: InboxRule;
  constructor(rule: InboxRule, message: string) {
    super(`${INBOX_RULES[rule]}: ${message}`);
    this.rule = rule;
  }
}
