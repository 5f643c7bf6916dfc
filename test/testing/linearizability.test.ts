/**
 * The linearizability search (src/testing/linearizability.ts) and its time zones (time-bounds.ts), on
 * hand-written histories of one key: what it must accept (overlapping calls in some order, a lease read
 * at some instant of a call's interval, calls whose outcome is unknown) and what it must refuse.
 */
import {
  checkLinearizable,
  type ObservedCall,
  type StoreAnswer,
  type StoreCall,
  UNKNOWN,
} from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { TimeBounds } from '../../src/testing/time-bounds.js';

/**
 * A history from lines of [call, answer, startMs, endMs]: events are ordered by time, a start before an
 * end at the same instant (so calls that touch in time overlap).
 */
function history(
  lines: readonly (readonly [StoreCall, StoreAnswer | typeof UNKNOWN, number, number])[],
): ObservedCall[] {
  const events = lines.flatMap(([, answer, start, end], id) => [
    { id, at: start, start: true },
    ...(answer === UNKNOWN ? [] : [{ id, at: end, start: false }]),
  ]);
  events.sort((a, b) => a.at - b.at || Number(b.start) - Number(a.start));
  const seq = new Map<string, number>();
  for (const [index, event] of events.entries()) seq.set(`${event.id}${event.start}`, index + 1);
  return lines.map(([call, answer, start, end], id) => ({
    id,
    call,
    answer,
    startSeq: seq.get(`${id}true`)!,
    endSeq: answer === UNKNOWN ? Number.POSITIVE_INFINITY : seq.get(`${id}false`)!,
    startMs: start,
    endMs: answer === UNKNOWN ? Number.POSITIVE_INFINITY : end,
  }));
}

const claim = (token: string, ms = 30): StoreCall => ({ method: 'claim', token, ms });
const complete = (token: string, ms = 30): StoreCall => ({ method: 'complete', token, ms });
const release = (token: string): StoreCall => ({ method: 'release', token });
const exact = { toleranceMs: 0, maxSteps: 100_000 };

describe('TimeBounds', () => {
  test('keeps difference constraints closed, and finds contradictions', () => {
    const zone = TimeBounds.unconstrained()
      .within(TimeBounds.WRITER, 0, 10)
      ?.within(TimeBounds.NEXT, 35, 36)
      ?.atMostAfter(TimeBounds.NEXT, TimeBounds.WRITER, 30);
    expect(zone?.range(TimeBounds.WRITER)).toEqual([5, 10]);
    expect(zone?.atLeastAfter(TimeBounds.NEXT, TimeBounds.WRITER, 37)).toBeUndefined();
    const advanced = zone?.advance('next');
    expect(advanced?.range(TimeBounds.LAST)).toEqual([35, 36]);
    expect(advanced?.range(TimeBounds.WRITER)).toEqual([35, 36]);
    expect(advanced?.range(TimeBounds.NEXT)).toEqual([-Infinity, Infinity]);
  });
});

describe('checkLinearizable', () => {
  test('accepts overlapping claims in whichever order explains them', () => {
    const calls = history([
      [claim('b'), 'in_progress', 0, 2],
      [claim('a'), 'claimed', 1, 3],
    ]);
    expect(checkLinearizable(calls, exact)).toEqual({ kind: 'linearizable' });
  });

  test('refuses two claims that both answered claimed within one lease, naming the second', () => {
    const calls = history([
      [claim('a'), 'claimed', 0, 2],
      [claim('b'), 'claimed', 1, 3],
    ]);
    const verdict = checkLinearizable(calls, exact);
    expect(verdict).toMatchObject({
      kind: 'violation',
      allowed: ['in_progress'],
      record: { state: 'in_progress' },
    });
  });

  test('refuses an order that real time forbids: a call that returned first comes first', () => {
    const calls = history([
      [claim('a'), 'in_progress', 0, 1],
      [claim('b'), 'claimed', 2, 3],
    ]);
    expect(checkLinearizable(calls, exact)).toMatchObject({
      kind: 'violation',
      stuck: 0,
      allowed: ['claimed'],
    });
  });

  test('reads a lease at the call’s instant, within the clock tolerance', () => {
    const at = (start: number, answer: StoreAnswer, toleranceMs: number) =>
      checkLinearizable(
        history([
          [claim('a', 30), 'claimed', 0, 0],
          [claim('b'), answer, start, start],
        ]),
        { toleranceMs, maxSteps: 100_000 },
      ).kind;
    expect(at(29, 'in_progress', 0)).toBe('linearizable');
    expect(at(29, 'claimed', 0)).toBe('violation');
    expect(at(29, 'claimed', 2)).toBe('linearizable');
    expect(at(30, 'claimed', 0)).toBe('linearizable');
    expect(at(30, 'in_progress', 0)).toBe('linearizable'); // at the boundary, either
    expect(at(31, 'in_progress', 0)).toBe('violation');
    expect(at(31, 'in_progress', 2)).toBe('linearizable');
  });

  test('one call has one instant for every call that reads its record (which intervals alone miss)', () => {
    // a may have taken effect anywhere in [0, 10]. b found it held at [5, 6], so it was at most 6;
    // c found its 30 ms lease still live at [37.5, 38], so it was at least 7.5. No instant does both.
    const calls = history([
      [claim('a', 30), 'claimed', 0, 10],
      [claim('b'), 'in_progress', 5, 6],
      [claim('c'), 'in_progress', 37.5, 38],
    ]);
    expect(checkLinearizable(calls, exact)).toMatchObject({ kind: 'violation', stuck: 2 });
    const later = history([
      [claim('a', 30), 'claimed', 0, 10],
      [claim('b'), 'in_progress', 5, 6],
      [claim('c'), 'in_progress', 35.5, 36],
    ]);
    expect(checkLinearizable(later, exact)).toEqual({ kind: 'linearizable' });
  });

  test('a call that threw may have taken effect, at any later time, or not at all', () => {
    const tookEffect = history([
      [claim('a'), UNKNOWN, 0, 1],
      [claim('b'), 'in_progress', 10, 11],
    ]);
    expect(checkLinearizable(tookEffect, exact)).toEqual({ kind: 'linearizable' });
    const didNot = history([
      [claim('a'), UNKNOWN, 0, 1],
      [claim('b'), 'claimed', 10, 11],
      [complete('b'), 'completed', 12, 13],
    ]);
    expect(checkLinearizable(didNot, exact)).toEqual({ kind: 'linearizable' });
    // But not both: b's claim and a later stranger's both "claimed" within b's lease.
    const both = history([
      [claim('a'), UNKNOWN, 0, 1],
      [claim('b'), 'claimed', 10, 11],
      [claim('c'), 'claimed', 12, 13],
    ]);
    expect(checkLinearizable(both, exact).kind).toBe('violation');
  });

  test('a release never undoes a completion', () => {
    const calls = history([
      [claim('a'), 'claimed', 0, 1],
      [complete('a', 1_000), 'completed', 2, 3],
      [release('a'), undefined, 4, 5],
      [claim('b'), 'claimed', 6, 7],
    ]);
    expect(checkLinearizable(calls, exact)).toMatchObject({ kind: 'violation', allowed: ['completed'] });
  });

  test('gives up, inconclusive, past its step budget', () => {
    // Ten overlapping releases can go in 1,024 orders (memoized to as many sets) before the claim that
    // no order explains: a budget of 5 steps ends the search first.
    const calls = history([
      ...Array.from({ length: 10 }, (_, i) => [release(`t${i}`), undefined, 0, 100] as const),
      [claim('a'), 'in_progress', 200, 201],
    ]);
    expect(checkLinearizable(calls, { toleranceMs: 0, maxSteps: 5 })).toMatchObject({ kind: 'inconclusive' });
    expect(checkLinearizable(calls, exact)).toMatchObject({ kind: 'violation', stuck: 10 });
  });
});
