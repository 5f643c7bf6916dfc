/**
 * inboxConformanceSuite's self-test: the zoo's reference engine (./inbox-zoo.ts) passes every test,
 * and each of its broken variants fails at least one, with InboxConformanceError naming the rule
 * the bug breaks. The suite's tests run programmatically (collected from a shim of describe and
 * test), every engine's at once: each test has its own inbox and store.
 *
 * Measured (and asserted only as "the flaw's own rule is among the failures"): most flaws fail
 * exactly their rule's test; "acknowledges before the write lands" fails nearly every test (each
 * enqueues once and waits), and "never dead-letters" fails every test that waits for a dead letter
 * (deadLetter, replay, poison, admin). The run takes about 20 s: the failing tests wait out the
 * suite's wait (about 19 s with the defaults) concurrently.
 */
import { ConfigurationError } from 'service-webhooks';
import {
  INBOX_RULES,
  InboxConformanceError,
  type InboxConformanceOptions,
  type InboxRule,
  inboxConformanceSuite,
} from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { INBOX_FLAWS, type InboxFlaw, ZOO_INBOX_FLAWS, zooInbox } from './inbox-zoo.js';

interface CollectedTest {
  readonly name: string;
  readonly body: () => Promise<void>;
}

/** The suite's tests for one engine, collected on a shim of describe and test. */
function conformanceTests(options: Omit<InboxConformanceOptions, 'describe' | 'test'>): CollectedTest[] {
  const collected: CollectedTest[] = [];
  inboxConformanceSuite({
    ...options,
    describe: (_name, body) => body(),
    test: (name, body) => collected.push({ name, body }),
  });
  return collected;
}

interface Failure {
  readonly test: string;
  /** The rule named by the InboxConformanceError; `undefined` when the test failed some other way. */
  readonly rule: InboxRule | undefined;
  readonly message: string;
}

/** The failures of the suite's tests on the zoo engine with `flaw` (none: the reference). */
async function conformanceFailures(
  flaw: InboxFlaw | undefined,
  declared: Partial<InboxConformanceOptions> = {},
): Promise<Failure[]> {
  const tests = conformanceTests({
    name: flaw ?? 'zoo',
    createInbox: async () => zooInbox(flaw),
    ...declared,
  });
  const outcomes = await Promise.all(
    tests.map(({ name, body }) =>
      body().then(
        () => undefined,
        (error: unknown): Failure => ({
          test: name,
          rule: error instanceof InboxConformanceError ? error.rule : undefined,
          message: String(error),
        }),
      ),
    ),
  );
  return outcomes.filter((outcome) => outcome !== undefined);
}

describe('inboxConformanceSuite on the zoo', () => {
  test('refuses options it cannot run with, before registering anything', () => {
    const valid = { name: 'zoo', createInbox: async () => zooInbox(undefined) };
    expect(() => conformanceTests({ ...valid, retryDelayMs: 0 })).toThrow(ConfigurationError);
    expect(() => conformanceTests({ ...valid, recoveryMs: 1.5 })).toThrow(/recoveryMs/);
    expect(() => conformanceTests({ ...valid, name: '' })).toThrow(/name/);
    expect(() => conformanceTests({ ...valid, createInbox: undefined as never })).toThrow(/createInbox/);
  });

  test('collects one test per check, every rule covered', () => {
    const names = conformanceTests({ name: 'zoo', createInbox: async () => zooInbox(undefined) }).map(
      (collected) => collected.name,
    );
    expect(names).toHaveLength(11);
    expect(new Set(names).size).toBe(names.length);
    for (const rule of Object.values(INBOX_RULES))
      expect(names.some((name) => name.startsWith(rule))).toBe(true);
  });

  test('passes the reference engine and catches every broken one under the rule it breaks', async () => {
    const started = performance.now();
    const [reference, declaredDuplicates, ...broken] = await Promise.all([
      conformanceFailures(undefined),
      // An engine may declare that it keeps duplicates (a standard SQS queue): the store's claim must
      // then still complete each event once, and the duplicating engine does.
      conformanceFailures('a second enqueue of one key adds a second entry', { dedupesEnqueue: false }),
      ...ZOO_INBOX_FLAWS.map((flaw) => conformanceFailures(flaw)),
    ]);
    expect(reference, JSON.stringify(reference, null, 2)).toEqual([]);
    expect(declaredDuplicates, JSON.stringify(declaredDuplicates, null, 2)).toEqual([]);
    for (const [index, flaw] of ZOO_INBOX_FLAWS.entries()) {
      const failures = broken[index]!;
      const rules = failures.map((failure) => failure.rule);
      expect(rules, `${flaw}: ${JSON.stringify(failures, null, 2)}`).toContain(INBOX_FLAWS[flaw]);
      // Every failure is the suite's own verdict, never a crash of the test itself.
      expect(rules, `${flaw}: ${JSON.stringify(failures, null, 2)}`).not.toContain(undefined);
    }
    expect(performance.now() - started).toBeLessThan(60_000);
  }, 90_000);
});
