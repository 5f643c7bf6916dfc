import type { HistoryViolation } from './history-check.js';
import type { RecordedCall, RecordedHistory } from './history-runner.js';

/** Past this many calls the printout elides the rest (a shrunk history is far shorter). */
const MAX_LINES = 120;

/**
 * A recorded history as text: its keys, then every call in the order it was made, with its interval on
 * the history's clock, its outcome, and (for a violation) its place in the longest order the model
 * explains (`#1`, `#2`, …) or the mark of the call no order explains (`✗`).
 *
 * @example
 * ```ts
 * console.log(formatHistory(history, verdict.ok ? undefined : verdict.violation));
 * // keys: k0 = "evt_Payment_7" (case), k1 = "evt_payment_7" (case)
 * //  #1  c0 claim    k0 p0:1   lease 30   [   0.0 →    0.1] claimed
 * //   ✗  c1 claim    k1 p0:2   lease 30   [   0.0 →    0.1] in_progress
 * ```
 */
export function formatHistory(history: RecordedHistory, violation?: HistoryViolation): string {
  const lines: string[] = [];
  lines.push(`keys (each after the history's prefix ${JSON.stringify(history.keyPrefix)}):`);
  for (const [index, planned] of history.plan.keys.entries()) {
    const text = planned.long
      ? `${history.keys[index]!.length - history.keyPrefix.length - planned.text.length} dots, then ${readable(planned.text)} (${history.keys[index]!.length} characters with the prefix)`
      : readable(history.keys[index]!.slice(history.keyPrefix.length));
    lines.push(`  k${index} = ${text}   [${planned.family}]`);
  }
  const order = new Map((violation?.explained ?? []).map((id, place) => [id, place + 1]));
  lines.push(
    'calls (ms from the history start; #n: place in the longest order the model explains; ✗: the call no order explains):',
  );
  // Calls in the order they were made, each injected fault among them where it happened. For a
  // violation, only the calls of the keys that show it: linearizability is checked key by key, so the
  // others cannot explain it (they are counted below).
  const shown = violation === undefined ? undefined : new Set(violation.keys);
  const calls = history.calls.filter((recorded) => shown === undefined || shown.has(recorded.key));
  const events = [
    ...calls.map((recorded) => ({ seq: recorded.startSeq, recorded, fault: undefined })),
    ...history.faults
      .filter((fault) => fault.callId === undefined || calls.includes(history.calls[fault.callId]!))
      .map((fault) => ({ seq: fault.seq, recorded: undefined, fault })),
  ].sort((a, b) => a.seq - b.seq);
  for (const { recorded, fault } of events.slice(0, MAX_LINES)) {
    if (fault !== undefined) {
      const hit = fault.callId === undefined ? undefined : history.calls[fault.callId];
      const into = hit === undefined ? '' : ` of c${hit.client}'s ${hit.call.method}`;
      const what = fault.choice === 'throw' ? 'a failure' : 'a slow answer';
      lines.push(`     ↯ injected: ${what} in ${fault.operation}${into} at ${fault.atMs.toFixed(1)}`);
      continue;
    }
    if (recorded === undefined) continue;
    const mark =
      violation?.callId === recorded.id
        ? '  ✗'
        : order.has(recorded.id)
          ? `#${order.get(recorded.id)}`.padStart(3)
          : '   ';
    lines.push(`${mark}  ${line(history, recorded)}`);
  }
  if (events.length > MAX_LINES) lines.push(`     … and ${events.length - MAX_LINES} more`);
  const hidden = history.calls.length - calls.length;
  if (hidden > 0) lines.push(`(${hidden} calls on other keys, which cannot bear on it, are not shown)`);
  const idle = history.plan.clients.filter((program) => program.length === 0).length;
  if (idle > 0) lines.push(`(${idle} of ${history.plan.clients.length} clients made no call)`);
  if (!history.settled) lines.push('some calls had not settled when the history ended (shown as pending)');
  return lines.join('\n');
}

/** JSON-quoted, with combining marks and invisible characters escaped, so look-alike keys look different. */
function readable(text: string): string {
  return JSON.stringify(text).replace(
    /[\p{M}\p{C}\uFFFD]/gu,
    (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function line(history: RecordedHistory, recorded: RecordedCall): string {
  const { call } = recorded;
  const token = history.tokenLabels.get(call.token) ?? call.token;
  const argument =
    call.method === 'release' ? '' : `${call.method === 'complete' ? 'ttl' : 'lease'} ${call.ms}`;
  const end = Number.isFinite(recorded.endMs) ? recorded.endMs.toFixed(1).padStart(7) : '      …';
  const interval = `[${recorded.startMs.toFixed(1).padStart(7)} → ${end}]`;
  const outcome =
    recorded.outcome.kind === 'answered'
      ? recorded.call.method === 'release'
        ? 'done'
        : String(recorded.outcome.answer)
      : recorded.outcome.kind === 'threw'
        ? `threw ${recorded.outcome.error}`
        : 'pending (never settled)';
  const late = recorded.abandoned ? ' (after the client gave up at the deadline)' : '';
  return `c${recorded.client} ${call.method.padEnd(8)} k${recorded.key} ${token.padEnd(6)} ${argument.padEnd(14)} ${interval} ${outcome}${late}`;
}
