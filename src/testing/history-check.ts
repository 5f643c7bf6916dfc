import type { RecordedCall, RecordedHistory } from './history-runner.js';
import { checkLinearizable, type KeyVerdict, type ObservedCall, UNKNOWN } from './linearizability.js';
import type { ModelRecord, StoreAnswer } from './store-model.js';

/**
 * Why a history is not linearizable, in the words of the store rules: the rule broken (docs: "Writing
 * your own store", 1 to 8), a one-line summary, the call no order explains (`callId`), one order of the
 * calls before it that the model does explain (`explained`, call ids), and a sentence with the times.
 *
 * @example
 * ```ts
 * const verdict = checkHistory(history, { toleranceMs: 2, maxSteps: 200_000 });
 * if (!verdict.ok) console.log(`rule ${verdict.violation.rule}: ${verdict.violation.summary}`);
 * ```
 */
export interface HistoryViolation {
  readonly rule: number;
  readonly summary: string;
  readonly detail: string;
  readonly key: number;
  /** The keys whose calls show the violation: `key`, and for rule 7 the key it shares a record with. */
  readonly keys: readonly number[];
  readonly callId: number;
  readonly explained: readonly number[];
}

/**
 * The verdict on a whole history: every key's calls linearizable (`inconclusive` counts the keys whose
 * search ran out of budget, which pass), or the first violation found.
 *
 * @example
 * ```ts
 * const verdict: HistoryVerdict = checkHistory(history, options);
 * ```
 */
export type HistoryVerdict =
  | { readonly ok: true; readonly inconclusive: number }
  | { readonly ok: false; readonly violation: HistoryViolation };

/** The answers each method may give (rule 8: anything else is a guess, or a bug). */
const ANSWERS: Readonly<Record<string, readonly StoreAnswer[]>> = {
  claim: ['claimed', 'in_progress', 'completed'],
  complete: ['completed', 'lost'],
  renew: ['renewed', 'lost'],
};

/**
 * Check a recorded history against the store model: the answers each method may give, then each key's
 * calls for linearizability ({@link checkLinearizable}). For a violation on a key, it also tries the
 * key merged with each other key of the history: when the merged calls are linearizable, the store
 * keeps the two keys in one record (rule 7), and the violation says so.
 *
 * @example
 * ```ts
 * const verdict = checkHistory(history, { toleranceMs: 2, maxSteps: 200_000 });
 * ```
 */
export function checkHistory(
  history: RecordedHistory,
  options: { readonly toleranceMs: number; readonly maxSteps: number },
): HistoryVerdict {
  for (const recorded of history.calls) {
    if (recorded.outcome.kind !== 'answered') continue;
    const allowed = ANSWERS[recorded.call.method];
    const { answer } = recorded.outcome;
    if (allowed !== undefined && !allowed.includes(answer)) {
      return {
        ok: false,
        violation: {
          rule: 8,
          summary: `${recorded.call.method} answered ${show(answer)}, which is not an answer of the contract`,
          detail: `${recorded.call.method} may answer ${allowed.map(show).join(' or ')}.`,
          key: recorded.key,
          keys: [recorded.key],
          callId: recorded.id,
          explained: [],
        },
      };
    }
  }
  const byKey = new Map<number, RecordedCall[]>();
  for (const recorded of history.calls) {
    const list = byKey.get(recorded.key) ?? [];
    list.push(recorded);
    byKey.set(recorded.key, list);
  }
  let inconclusive = 0;
  for (const [key, recorded] of [...byKey].sort(([a], [b]) => a - b)) {
    const verdict = checkLinearizable(recorded.map(observed), options);
    if (verdict.kind === 'linearizable') continue;
    if (verdict.kind === 'inconclusive') {
      inconclusive++;
      continue;
    }
    // Look-alikes come in families (same case-folding, same tail…): a key merged with one of another
    // family that happens to fit would name the wrong cause.
    const family = history.plan.keys[key]?.family;
    const merged = [...byKey].find(
      ([other, calls]) =>
        other !== key &&
        history.plan.keys[other]?.family === family &&
        checkLinearizable([...recorded, ...calls].map(observed), options).kind === 'linearizable',
    );
    return { ok: false, violation: explain(history, key, verdict, merged?.[0]) };
  }
  return { ok: true, inconclusive };
}

function observed(recorded: RecordedCall): ObservedCall {
  const answered = recorded.outcome.kind === 'answered';
  return {
    id: recorded.id,
    call: recorded.call,
    answer: recorded.outcome.kind === 'answered' ? recorded.outcome.answer : UNKNOWN,
    startSeq: recorded.startSeq,
    startMs: recorded.startMs,
    // A call that threw or never answered may still take effect later: its interval never closes.
    endSeq: answered ? recorded.endSeq : Number.POSITIVE_INFINITY,
    endMs: answered ? recorded.endMs : Number.POSITIVE_INFINITY,
  };
}

function show(answer: unknown): string {
  return answer === undefined ? 'nothing' : (JSON.stringify(answer) ?? String(answer));
}

function explain(
  history: RecordedHistory,
  key: number,
  verdict: Extract<KeyVerdict, { kind: 'violation' }>,
  mergedWith: number | undefined,
): HistoryViolation {
  const stuck = history.calls[verdict.stuck]!;
  const answer = stuck.outcome.kind === 'answered' ? stuck.outcome.answer : undefined;
  const base = {
    key,
    keys: mergedWith === undefined ? [key] : [key, mergedWith],
    callId: stuck.id,
    explained: verdict.explained,
  };
  const allowed =
    verdict.allowed.length === 0
      ? 'no answer fits at any instant of its interval'
      : `the model allows only ${verdict.allowed.map(show).join(' or ')} there`;
  const suspects = guesses(history);
  const hint =
    suspects.length === 0
      ? ''
      : ` An injected failure fell within ${suspects.map((recorded) => describeCall(history, recorded)).join(', ')}, which answered anyway.`;
  const detail = `${describeCall(history, stuck)} answered ${show(answer)}; ${allowed}${timing(history, stuck, verdict)}.${hint}`;
  if (mergedWith !== undefined) {
    const [a, b] = [Math.min(key, mergedWith), Math.max(key, mergedWith)];
    const family = history.plan.keys[a]?.family ?? 'look-alike';
    return {
      ...base,
      rule: 7,
      summary: `keys k${a} and k${b} share one record (they differ only in ${familyDifference(family)})`,
      detail: `${detail} Taken as one key, the calls of k${a} and k${b} are linearizable.`,
    };
  }
  const guess = suspects.find((recorded) => recorded.id === stuck.id || recorded.id === verdict.writer);
  if (guess !== undefined && guess.outcome.kind === 'answered') {
    return {
      ...base,
      rule: 8,
      summary: `a ${guess.call.method} answered ${show(guess.outcome.answer)} although its backend failed (a guess, not the truth)`,
      detail,
    };
  }
  const [rule, summary] = classify(stuck, answer, verdict.record, verdict.allowed, history, verdict.writer);
  return { ...base, rule, summary, detail };
}

function familyDifference(family: string): string {
  switch (family) {
    case 'case':
      return 'case';
    case 'accents':
      return 'accents or Unicode normalization';
    case 'tail':
      return 'their last character, at 400 characters';
    case 'prefix':
      return 'their tail';
    case 'separators':
      return 'separators, braces or escapes';
    case 'fnv1a32':
      return 'characters, having one 32-bit FNV-1a hash: records keyed by a hash of the key';
    case 'crc32':
      return 'characters, having one CRC-32: records keyed by a hash of the key';
    case 'djb2':
      return 'characters, having one djb2 hash: records keyed by a hash of the key';
    case 'javaHashCode':
      return 'characters, having one Java hashCode: records keyed by a hash of the key';
    default:
      return 'characters a backend may not keep (astral, unpaired surrogates, NUL)';
  }
}

/** The rule broken and a one-line summary, from the call, its answer and the model's record there. */
function classify(
  stuck: RecordedCall,
  answer: StoreAnswer,
  record: ModelRecord,
  allowed: readonly StoreAnswer[],
  history: RecordedHistory,
  writer: number | undefined,
): [number, string] {
  const { method } = stuck.call;
  const held = record.state === 'in_progress';
  const done = record.state === 'completed';
  const writtenBy = writer === undefined ? undefined : history.calls[writer]?.call.method;
  if (allowed.length === 0) {
    return [5, `no instant within the ${method}'s interval fits an order of the calls before it`];
  }
  if (method === 'claim') {
    if (answer === 'claimed' && held) {
      return [
        1,
        writtenBy === 'claim'
          ? 'two claims of one key both answered "claimed" (the second within the first\'s lease)'
          : 'a claim answered "claimed" while another attempt held a live lease',
      ];
    }
    if (answer === 'claimed' && done)
      return [1, 'a claim answered "claimed" while a completion was live (within its TTL)'];
    if (answer === 'completed' && held)
      return [8, 'a claim answered "completed" while another attempt held the event'];
    if (answer === 'completed') return [1, 'a claim answered "completed" although no completion was live'];
    if (answer === 'in_progress' && done) return [1, 'a claim answered "in_progress" for a completed event'];
    if (answer === 'in_progress') {
      return [
        1,
        'a claim answered "in_progress" although no lease was live (never taken, released, or ended)',
      ];
    }
  }
  if (method === 'complete' || method === 'renew') {
    const rule = method === 'complete' ? 2 : 4;
    if (answer === 'lost') {
      return [rule, `${method} answered "lost" for the token that held the key, or where nothing was live`];
    }
    if (held) return [rule, `${method} answered "${answer}" while another token held a live lease`];
    if (done) return [rule, `${method} answered "${answer}" for an event completed within its TTL`];
  }
  return [5, `${method} answered ${show(answer)}, which no order of the calls explains`];
}

/** How the call's interval stands against the lease or TTL of the record it found. */
function timing(
  history: RecordedHistory,
  stuck: RecordedCall,
  verdict: Extract<KeyVerdict, { kind: 'violation' }>,
): string {
  const { record, writer } = verdict;
  if (record.state === 'absent' || writer === undefined) return '';
  const wrote = history.calls[writer];
  if (wrote === undefined) return '';
  const what = record.state === 'in_progress' ? `lease of ${record.ms} ms` : `TTL of ${record.ms} ms`;
  const earliest = Math.max(0, stuck.startMs - wrote.endMs);
  const latest = stuck.endMs - wrote.startMs;
  return ` (it ran ${ms(earliest)} to ${ms(latest)} after ${describeCall(history, wrote)}, which wrote a ${what})`;
}

/**
 * Rule 8's tell: calls that answered although a failure was injected into them (the runner knows which
 * call a fault hit where the runtime tracks async context). A store may retry and then answer the
 * truth, so this only names the rule when such a call is the one no order explains, or the one that
 * wrote the record it contradicts.
 */
function guesses(history: RecordedHistory): RecordedCall[] {
  const hit = new Set(
    history.faults.filter((fault) => fault.choice === 'throw').map((fault) => fault.callId),
  );
  return history.calls.filter((recorded) => recorded.outcome.kind === 'answered' && hit.has(recorded.id));
}

function ms(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(1)} ms` : 'any time';
}

/**
 * A call in words, for violations.
 *
 * @example
 * ```ts
 * describeCall(history, history.calls[3]!); // "c2's claim of k0 with p1:4"
 * ```
 */
export function describeCall(history: RecordedHistory, recorded: RecordedCall): string {
  const token = history.tokenLabels.get(recorded.call.token) ?? recorded.call.token;
  return `c${recorded.client}'s ${recorded.call.method} of k${recorded.key} with ${token}`;
}
