/**
 * The SIGKILL runs' verdict on extra runs (crash-window.ts): what it accepts as the crash window and
 * what it calls unexplained. A verdict that accepted too much would hide a lost completion in every
 * engine's SIGKILL run at once.
 */
import { describe, expect, test } from 'vitest';
import { judgeSecondRuns, type LoggedRun } from './crash-window.js';

const runs = (entries: Record<string, LoggedRun[]>) => new Map(Object.entries(entries));

describe('judgeSecondRuns', () => {
  test('one run is no verdict at all', () => {
    expect(judgeSecondRuns(runs({ a: [{ pid: 1, at: 10 }] }), [], new Set())).toEqual({
      crashWindow: [],
      unexplained: [],
    });
  });

  test('a second run after a worker killed after its run, unrecorded, is the crash window', () => {
    const verdict = judgeSecondRuns(
      runs({
        a: [
          { pid: 2, at: 30 },
          { pid: 1, at: 10 },
        ],
      }),
      [{ pid: 1, at: 12 }],
      new Set(),
    );
    expect(verdict.unexplained).toEqual([]);
    expect(verdict.crashWindow).toEqual(['a: [{"pid":1,"at":10},{"pid":2,"at":30}]']);
  });

  test('a second run is unexplained when the first worker lived, was killed before its run, or recorded it', () => {
    const twice = runs({
      a: [
        { pid: 1, at: 10 },
        { pid: 2, at: 30 },
      ],
    });
    expect(judgeSecondRuns(twice, [], new Set()).unexplained).toHaveLength(1);
    expect(judgeSecondRuns(twice, [{ pid: 1, at: 9 }], new Set()).unexplained).toHaveLength(1);
    const recorded = judgeSecondRuns(twice, [{ pid: 1, at: 12 }], new Set(['a 1']));
    expect(recorded.crashWindow).toEqual([]);
    expect(recorded.unexplained).toEqual([
      'a: [{"pid":1,"at":10,"killedAt":12,"recorded":true},{"pid":2,"at":30,"killedAt":null,"recorded":false}]',
    ]);
  });

  test('a third run is the crash window only when the second run was cut short too', () => {
    const thrice = runs({
      a: [
        { pid: 1, at: 10 },
        { pid: 2, at: 20 },
        { pid: 3, at: 30 },
      ],
    });
    const bothKilled = [
      { pid: 1, at: 11 },
      { pid: 2, at: 21 },
    ];
    expect(judgeSecondRuns(thrice, bothKilled, new Set()).crashWindow).toHaveLength(1);
    // The second worker lived on, or recorded the completion: the third run had no cause.
    expect(judgeSecondRuns(thrice, [{ pid: 1, at: 11 }], new Set()).unexplained).toHaveLength(1);
    expect(judgeSecondRuns(thrice, bothKilled, new Set(['a 2'])).unexplained).toHaveLength(1);
  });
});
