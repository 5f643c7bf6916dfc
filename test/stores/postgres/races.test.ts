/**
 * PostgresStore's answers when statements of several attempts overlap on one row, against a real
 * PostgreSQL (DATABASE_URL, otherwise postgres@127.0.0.1:5432/test), in a table of its own.
 *
 * Most tests here are deterministic: an attempt's write is held open in a transaction (the row is
 * locked, the change not yet visible), the store call under test is sent and seen waiting on that
 * lock in pg_stat_activity, then the transaction commits. The waiting statement's snapshot predates
 * the commit, which is exactly where an answer read from the snapshot goes stale.
 */
import pg from 'pg';
import { type PostgresQueryable, PostgresStore } from 'service-webhooks/postgres';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sleep } from '../../support/sleep.js';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const table = `webhook_events_races_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
// 30 connections, as in the review that found the stale 'completed': 20 claims at once never queue.
const pool = new pg.Pool({ connectionString, max: 30 });

const token = () => crypto.randomUUID();
const freshId = (label: string) => `${label}-${crypto.randomUUID()}`;

beforeAll(async () => {
  await new PostgresStore({ pool, table }).createTable();
  // Open every connection first: the race needs 20 statements at once, not 20 connection start-ups.
  await Promise.all(Array.from({ length: 30 }, () => pool.query('SELECT pg_sleep(0.05)')));
});

afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_resources"`);
  await pool.end();
});

/**
 * A transaction on a connection of its own, and a store that writes through it: what the store writes
 * there is locked and invisible to others until `commit`.
 */
async function openTransaction() {
  const client = await pool.connect();
  await client.query('BEGIN');
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  let open = true;
  const end = async (command: 'COMMIT' | 'ROLLBACK') => {
    if (!open) return;
    open = false;
    try {
      await client.query(command);
    } finally {
      client.release();
    }
  };
  return {
    store: new PostgresStore({ pool: client, table }),
    /** Resolves once `count` statements of other connections wait on this transaction's locks. */
    async blocking(count: number) {
      for (let waited = 0; waited < 10_000; waited += 10) {
        const { rows: blocked } = await pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
          [rows[0]!.pid],
        );
        if (blocked[0]!.n >= count) return;
        await sleep(10);
      }
      throw new Error(`${count} statements never waited on the open transaction`);
    },
    commit: () => end('COMMIT'),
    rollback: () => end('ROLLBACK'),
  };
}

/**
 * The race each test here stages: `write` runs in a transaction left open (its row locked, its change
 * not yet visible), `call` is sent and seen waiting on that lock (`waiting` statements of it), and,
 * `holdMs` later, the transaction commits. Resolves to what `call` answered once it could go on.
 */
async function queuedBehindOpenWrite<T>(
  write: (store: PostgresStore) => Promise<void>,
  call: () => Promise<T>,
  { waiting = 1, holdMs = 0 }: { waiting?: number; holdMs?: number } = {},
): Promise<T> {
  const transaction = await openTransaction();
  try {
    await write(transaction.store);
    const queued = call();
    await transaction.blocking(waiting);
    if (holdMs > 0) await sleep(holdMs);
    await transaction.commit();
    return await queued;
  } finally {
    await transaction.rollback();
  }
}

describe('claim answers what the row is once the claim is decided', () => {
  test("claims racing the takeover of an expired completion: one 'claimed' per round, never 'completed'", async () => {
    const store = new PostgresStore({ pool, table });
    const totals = { claimed: 0, completed: 0, in_progress: 0 };
    const rounds: string[] = [];
    for (let round = 0; round < 20; round++) {
      const id = freshId('expired-completion');
      expect(await store.complete(id, token(), 50)).toBe('completed');
      await sleep(120);
      const results = await Promise.all(Array.from({ length: 20 }, () => store.claim(id, token(), 60_000)));
      for (const result of results) totals[result]++;
      const claimed = results.filter((result) => result === 'claimed').length;
      const completed = results.filter((result) => result === 'completed').length;
      if (claimed !== 1 || completed !== 0) {
        rounds.push(`round ${round}: ${claimed} claimed, ${completed} completed`);
      }
    }
    console.info(
      `20 rounds x 20 claims after an expired completion: claimed ${totals.claimed}, completed ${totals.completed}, in_progress ${totals.in_progress}`,
    );
    expect(rounds).toEqual([]);
    expect(totals).toEqual({ claimed: 20, completed: 0, in_progress: 380 });
  });

  test("claims queued behind an open takeover of an expired completion answer 'in_progress'", async () => {
    const store = new PostgresStore({ pool, table });
    const id = freshId('takeover');
    expect(await store.complete(id, token(), 50)).toBe('completed');
    await sleep(120);
    const claims = await queuedBehindOpenWrite(
      async (takeover) => {
        expect(await takeover.claim(id, token(), 60_000)).toBe('claimed');
      },
      () => Promise.all(Array.from({ length: 5 }, () => store.claim(id, token(), 60_000))),
      { waiting: 5 },
    );
    expect(claims).toEqual(Array.from({ length: 5 }, () => 'in_progress'));
  });

  test("a claim queued behind an open first completion answers 'completed'", async () => {
    const store = new PostgresStore({ pool, table });
    const id = freshId('first-completion');
    const claim = await queuedBehindOpenWrite(
      async (completion) => {
        expect(await completion.complete(id, token(), 60_000)).toBe('completed');
      },
      () => store.claim(id, token(), 60_000),
    );
    expect(claim).toBe('completed');
  });

  test("a claim queued behind the holder's open completion answers 'completed'", async () => {
    const store = new PostgresStore({ pool, table });
    const id = freshId('completion');
    const owner = token();
    expect(await store.claim(id, owner, 60_000)).toBe('claimed');
    const claim = await queuedBehindOpenWrite(
      async (completion) => {
        expect(await completion.complete(id, owner, 60_000)).toBe('completed');
      },
      () => store.claim(id, token(), 60_000),
    );
    expect(claim).toBe('completed');
  });

  test('a claim queued behind an open release takes the event', async () => {
    const store = new PostgresStore({ pool, table });
    const id = freshId('release');
    const owner = token();
    expect(await store.claim(id, owner, 60_000)).toBe('claimed');
    const claim = await queuedBehindOpenWrite(
      (release) => release.release(id, owner),
      () => store.claim(id, token(), 60_000),
    );
    expect(claim).toBe('claimed');
  });

  /**
   * A pool that runs `between(text)` after each statement answers and before the store sees the
   * answer: another attempt's call, deterministically between two statements of one store call.
   */
  function interleaved(between: (text: string) => Promise<void>) {
    const statements: string[] = [];
    const queryable: PostgresQueryable = {
      async query<Row extends object>(text: string, values?: unknown[]) {
        const answer = await pool.query<Row>(text, values);
        statements.push(text);
        await between(text);
        return answer;
      },
    };
    return { queryable, statements };
  }

  test('a claim that found the event held, and then no live row (released meanwhile), claims afresh', async () => {
    const others = new PostgresStore({ pool, table });
    const id = freshId('released-between');
    const owner = token();
    expect(await others.claim(id, owner, 60_000)).toBe('claimed');
    let released = false;
    const { queryable } = interleaved(async () => {
      if (released) return;
      released = true;
      await others.release(id, owner);
    });
    expect(await new PostgresStore({ pool: queryable, table }).claim(id, token(), 60_000)).toBe('claimed');
    expect(await others.claim(id, token(), 60_000)).toBe('in_progress');
  });

  test("a claim that keeps finding the event held and then gone gives up after 3 rounds: 'in_progress'", async () => {
    const others = new PostgresStore({ pool, table });
    const id = freshId('churn');
    let holder = token();
    expect(await others.claim(id, holder, 60_000)).toBe('claimed');
    // After each statement of the store under test, the row changes hands: the holder releases it, and
    // once the store has seen no live row, another attempt claims it before the store claims again.
    let held = true;
    const { queryable, statements } = interleaved(async () => {
      if (held) {
        await others.release(id, holder);
      } else {
        holder = token();
        expect(await others.claim(id, holder, 60_000)).toBe('claimed');
      }
      held = !held;
    });
    expect(await new PostgresStore({ pool: queryable, table }).claim(id, token(), 60_000)).toBe(
      'in_progress',
    );
    expect(statements).toHaveLength(6);
  });

  test('the first claim of an event is one statement', async () => {
    const { queryable, statements } = interleaved(async () => {});
    expect(await new PostgresStore({ pool: queryable, table }).claim(freshId('fast'), token(), 60_000)).toBe(
      'claimed',
    );
    expect(statements).toHaveLength(1);
  });
});

describe('complete and renew decide on the row as it is, not on their snapshot', () => {
  for (const call of ['complete', 'renew'] as const) {
    test(`the old owner's ${call} queued behind an open takeover of its ended lease is 'lost'`, async () => {
      const store = new PostgresStore({ pool, table });
      const id = freshId(`late-${call}`);
      const owner = token();
      expect(await store.claim(id, owner, 1)).toBe('claimed');
      await sleep(20);
      const next = token();
      const late = await queuedBehindOpenWrite(
        async (takeover) => {
          expect(await takeover.claim(id, next, 60_000)).toBe('claimed');
        },
        () => store[call](id, owner, 60_000),
      );
      expect(late).toBe('lost');
      expect(await store.claim(id, token(), 60_000)).toBe('in_progress');
      expect(await store.complete(id, next, 60_000)).toBe('completed');
    });

    test(`a stranger's ${call} queued behind an open first completion is 'lost'`, async () => {
      const store = new PostgresStore({ pool, table });
      const id = freshId(`absent-${call}`);
      const stranger = await queuedBehindOpenWrite(
        async (completion) => {
          expect(await completion.complete(id, token(), 60_000)).toBe('completed');
        },
        () => store[call](id, token(), 60_000),
      );
      expect(stranger).toBe('lost');
      expect(await store.claim(id, token(), 60_000)).toBe('completed');
    });

    test(`the owner's ${call} queued behind its lease's open takeover-then-release succeeds`, async () => {
      // The row is gone once the blocker commits: no live record, so the owner's call goes through.
      const store = new PostgresStore({ pool, table });
      const id = freshId(`gone-${call}`);
      const owner = token();
      expect(await store.claim(id, owner, 1)).toBe('claimed');
      await sleep(20);
      const late = await queuedBehindOpenWrite(
        async (other) => {
          const next = token();
          expect(await other.claim(id, next, 60_000)).toBe('claimed');
          await other.release(id, next);
        },
        () => store[call](id, owner, 60_000),
      );
      expect(late).toBe(call === 'renew' ? 'renewed' : 'completed');
      expect(await store.claim(id, token(), 60_000)).toBe(call === 'renew' ? 'in_progress' : 'completed');
    });
  }
});

describe('a lease or TTL counts from when the call takes effect, not from before it waited for the row', () => {
  test('a claim queued behind an open write of an ended lease holds its whole lease once it takes over', async () => {
    const store = new PostgresStore({ pool, table });
    const id = freshId('queued-lease');
    const owner = token();
    expect(await store.claim(id, owner, 1)).toBe('claimed');
    await sleep(20);
    // The old owner renews for 1 ms in a transaction held open: the row is locked, and once committed
    // its lease has ended again, so the queued claim takes the event over.
    const claim = await queuedBehindOpenWrite(
      async (renewal) => {
        expect(await renewal.renew(id, owner, 1)).toBe('renewed');
      },
      () => store.claim(id, token(), 500),
      { holdMs: 600 },
    );
    expect(claim).toBe('claimed');
    // The claim took effect a moment ago, with a 500 ms lease: the event is in progress.
    expect(await store.claim(id, token(), 60_000)).toBe('in_progress');
  });

  /**
   * Found by checkStore on a loaded machine (issue 45, seed 32617288): a renew answered 'renewed' and a
   * claim took the event 35.8 ms after the renew began, within its 30 ms lease as the checker had to
   * place it. The renew had waited on a release's DELETE that was slow to commit: the row it waited for
   * was gone, so it took the INSERT path, whose expiry was read as its VALUES row was built, before
   * the wait. Here the release is held open 600 ms, as load stretches a commit.
   */
  for (const call of ['claim', 'renew', 'complete'] as const) {
    test(`a ${call} queued behind an open release records its whole ${call === 'complete' ? 'TTL' : 'lease'}`, async () => {
      const store = new PostgresStore({ pool, table });
      const id = freshId(`released-${call}`);
      const owner = token();
      expect(await store.claim(id, owner, 60_000)).toBe('claimed');
      const release = await openTransaction();
      try {
        await release.store.release(id, owner);
        const queued = store[call](id, token(), 500);
        await release.blocking(1);
        await sleep(600);
        await release.commit();
        expect(await queued).toBe(
          call === 'claim' ? 'claimed' : call === 'complete' ? 'completed' : 'renewed',
        );
        // It took effect a moment ago, for 500 ms: the event is still in progress, or completed.
        expect(await store.claim(id, token(), 60_000)).toBe(
          call === 'complete' ? 'completed' : 'in_progress',
        );
      } finally {
        await release.rollback();
      }
    });
  }

  for (const call of ['complete', 'renew'] as const) {
    test(`a stranger's ${call} queued behind an open write of an ended lease records its whole ${call === 'complete' ? 'TTL' : 'lease'}`, async () => {
      const store = new PostgresStore({ pool, table });
      const id = freshId(`queued-${call}`);
      const owner = token();
      expect(await store.claim(id, owner, 1)).toBe('claimed');
      await sleep(20);
      const late = await queuedBehindOpenWrite(
        async (renewal) => {
          expect(await renewal.renew(id, owner, 1)).toBe('renewed');
        },
        () => store[call](id, token(), 500),
        { holdMs: 600 },
      );
      expect(late).toBe(call === 'complete' ? 'completed' : 'renewed');
      expect(await store.claim(id, token(), 60_000)).toBe(call === 'complete' ? 'completed' : 'in_progress');
    });
  }
});
