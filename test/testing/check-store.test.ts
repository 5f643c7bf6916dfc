/**
 * checkStore and storeModelSuite (src/testing/check-store.ts, store-model-suite.ts) on MemoryStore, on
 * both clocks, and what they promise besides: a failure replays from its seed (and path), a store's
 * renew is checked either way, fast-check stays an optional peer loaded only when a check runs.
 */
import { readdir, readFile } from 'node:fs/promises';
import type { IdempotencyStore } from 'service-webhooks';
import { MemoryStore } from 'service-webhooks';
import { checkStore, StoreModelError, storeModelSuite } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { loadFastCheck } from '../../src/testing/check-store.js';
import { repoPath } from '../support/paths.js';
import { storeCheckSeed } from '../support/store-check.js';
import { ZooStore } from './store-zoo.js';

const seed = storeCheckSeed();

describe('checkStore on MemoryStore', () => {
  test('passes 1,000 histories on the virtual clock (its injected `now`) with the defaults', async () => {
    const report = await checkStore({
      createStore: ({ now }) => new MemoryStore({ now }),
      clock: 'virtual',
      seed,
    });
    expect(report, JSON.stringify(report)).toMatchObject({ ok: true, histories: 1_000, inconclusive: 0 });
    expect(report.calls).toBeGreaterThan(10_000);
  });

  test('with ordering: true, passes the ordering histories too, on both clocks', async () => {
    for (const virtual of [true, false]) {
      const report = await checkStore({
        createStore: ({ now }) => new MemoryStore(virtual ? { now } : {}),
        clock: virtual ? 'virtual' : 'real',
        histories: 40,
        ordering: true,
        seed,
      });
      expect(report, report.ok ? '' : `${report.violation}\n${report.history}`).toMatchObject({ ok: true });
    }
  }, 60_000);

  test('passes 100 histories on the real clock', async () => {
    const report = await checkStore({ createStore: () => new MemoryStore(), histories: 100, seed });
    expect(report, report.ok ? '' : `${report.violation}\n${report.history}`).toMatchObject({
      ok: true,
      histories: 100,
    });
  }, 60_000);

  test('stops at timeLimitMs and reports what it checked', async () => {
    // Long enough for a history or more on a loaded CI machine (500 ms once ended the check before
    // its first history finished: the next test's case).
    const report = await checkStore({ createStore: () => new MemoryStore(), timeLimitMs: 3_000, seed });
    expect(report).toMatchObject({ ok: true, interrupted: true });
    expect(report.histories).toBeGreaterThan(0);
    expect(report.histories).toBeLessThan(1_000);
  });

  test('a timeLimitMs shorter than one history is refused as having checked nothing, not passed', async () => {
    const refused = await checkStore({ createStore: () => new MemoryStore(), timeLimitMs: 1, seed }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(StoreModelError);
    expect((refused as Error).message).toMatch(
      /^checkStore: timeLimitMs \(1 ms\) ended the check before its first history finished, so nothing was checked\. Raise timeLimitMs/,
    );
  });
});

describe('a failure', () => {
  const broken = () =>
    checkStore({
      createStore: ({ now }) => new ZooStore({ flaw: 'keys compared case- and accent-insensitively', now }),
      clock: 'virtual',
      seed: 33,
    });
  /** The history printed without its key prefix, which is unique to each run. */
  const printed = (history: string) => history.replace(/prefix "[^"]*"/, 'prefix "…"');

  test('reports the rule, a shrunk history, and the seed and path that replay it exactly (virtual clock)', async () => {
    const [first, again] = [await broken(), await broken()];
    if (first.ok || again.ok) throw new Error('the broken store passed');
    expect(first.rule).toBe(7);
    expect(first.violation).toMatch(/^rule 7: keys k\d and k\d share one record/);
    expect(first.history).toMatch(/✗/);
    // The shrunk history is short: a few calls, not the dozens a generated one has.
    expect(first.history.split('\n').filter((line) => /^ *(#\d+|✗)? +c\d /.test(line)).length).toBeLessThan(
      8,
    );
    expect([again.seed, again.path, again.violation, printed(again.history)]).toEqual([
      first.seed,
      first.path,
      first.violation,
      printed(first.history),
    ]);
    const replayed = await checkStore({
      createStore: ({ now }) => new ZooStore({ flaw: 'keys compared case- and accent-insensitively', now }),
      clock: 'virtual',
      seed: first.seed,
      path: first.path,
    });
    expect(replayed).toMatchObject({ ok: false, violation: first.violation });
  });

  test('storeModelSuite registers one test, which throws the violation with its seed', async () => {
    const registered: { name: string; body: () => Promise<void>; timeout: number | undefined }[] = [];
    storeModelSuite({
      name: 'ZooStore (collation)',
      createStore: ({ now }) => new ZooStore({ flaw: 'keys compared case- and accent-insensitively', now }),
      clock: 'virtual',
      seed: 33,
      describe: (name, body) => {
        expect(name).toBe('ZooStore (collation) is linearizable against the IdempotencyStore model');
        body();
      },
      test: (name, body, timeout) => registered.push({ name, body, timeout }),
    });
    expect(registered.map(({ name, timeout }) => [name, timeout])).toEqual([
      ['1000 generated histories of 8 concurrent clients', 600_000],
    ]);
    const error = await registered[0]!.body().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreModelError);
    expect((error as Error).message).toMatch(/^ZooStore \(collation\) broke rule 7: /);
    expect((error as Error).message).toMatch(
      /Replay: checkStore\(\{ \.\.\.sameOptions, seed: 33, path: "[\d:]+" \}\)/,
    );
  });
});

describe('renew', () => {
  /** MemoryStore's calls without renew. */
  const withoutRenew = (): IdempotencyStore => {
    const store = new MemoryStore();
    return {
      claim: (key, token, ms) => store.claim(key, token, ms),
      complete: (key, token, ms) => store.complete(key, token, ms),
      release: (key, token) => store.release(key, token),
    };
  };

  test('a store without renew fails unless renews: false says so; then it is checked without renewals', async () => {
    await expect(checkStore({ createStore: withoutRenew, histories: 1 })).rejects.toThrow(
      /has no renew method: implement renew, or pass renews: false/,
    );
    const report = await checkStore({ createStore: withoutRenew, renews: false, histories: 20, seed });
    expect(report.ok).toBe(true);
    await expect(
      checkStore({ createStore: () => new MemoryStore(), renews: false, histories: 1 }),
    ).rejects.toThrow(StoreModelError);
  });
});

describe('setup', () => {
  test('a createStore or teardown that throws is reported as it is, not as a violation', async () => {
    const broken = new Error('no database');
    await expect(checkStore({ createStore: () => Promise.reject(broken), histories: 5 })).rejects.toBe(
      broken,
    );
    await expect(
      checkStore({
        createStore: () => new MemoryStore(),
        teardown: () => {
          throw broken;
        },
        histories: 5,
      }),
    ).rejects.toBe(broken);
  });
});

describe('fast-check, an optional peer dependency', () => {
  test('is loaded only when a check runs: src/testing imports its types, never the module', async () => {
    const folder = repoPath('src', 'testing');
    for (const file of await readdir(folder)) {
      // Code only: comments' examples may show the import.
      const source = (await readFile(`${folder}/${file}`, 'utf8')).replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      for (const line of source.match(/^import .* from 'fast-check';$/gm) ?? [])
        expect(line).toMatch(/^import type /);
      // A type query (`typeof import('fast-check')`) loads nothing; a call does.
      const dynamic = source.match(/(?<!typeof )import\('fast-check'\)/g) ?? [];
      expect(dynamic.length, file).toBe(file === 'check-store.ts' ? 1 : 0);
    }
  });

  test('missing, it is named with the command that installs it', async () => {
    const missing = Object.assign(new Error("Cannot find package 'fast-check'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const error = await loadFastCheck(() => Promise.reject(missing)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreModelError);
    expect((error as Error).message).toMatch(
      /need the fast-check package .*npm install --save-dev fast-check/,
    );
    expect((error as Error).cause).toBe(missing);
  });
});
