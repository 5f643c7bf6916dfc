import type { DeliveryLabel, DevAttempt, DevDelivery } from '../api-types.js';

const LABELS: Readonly<Record<DeliveryLabel, string>> = {
  sent: 'sent',
  replay: 'replay',
  edited: 'edited',
  forged_signature: 'forged signature',
  stale_created: 'stale created',
  concurrent_copy: 'concurrent copy',
  api: 'api',
};

export function labelText(label: DeliveryLabel): string {
  return LABELS[label] ?? label;
}

/** A short form of a duration: `60 ms`, `4.5 s`, `43 s`, `5 min`, `1 h 30 min`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(Math.round(ms / 100) / 10).toString()} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) {
    const minutes = Math.floor(seconds / 60);
    const rest = seconds % 60;
    return rest ? `${minutes} min ${rest} s` : `${minutes} min`;
  }
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.round((seconds % 3600) / 60);
  return minutes ? `${hours} h ${minutes} min` : `${hours} h`;
}

/** A countdown in whole seconds (the page's clock ticks once a second, finer would flicker). */
export function countdown(ms: number): string {
  if (ms <= 0) return 'due now';
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 60) return `in ${seconds} s`;
  return `in ${duration(seconds * 1000)}`;
}

// One formatter each, made once: `toLocaleTimeString` builds a new one per call, which a thousand rows feel.
const TIME = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hour12: false,
});
const DATE_TIME = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hour12: false,
});

export function time(iso: string | number): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : TIME.format(date);
}

export function dateTime(iso: string | number): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : DATE_TIME.format(date);
}

/** Event ids are long and share a prefix (`evt_…`); the tail is what tells two apart at a glance. */
export function shortId(id: string): string {
  return id.length > 14 ? `…${id.slice(-10)}` : id;
}

/**
 * What an attempt's chip says: the status, `dup` when the receiver had seen the event, `stale` when its
 * `ordering` had handled a newer event of the resource, or why none came.
 */
export function attemptText(attempt: DevAttempt): string {
  if (attempt.status !== null) {
    if (attempt.duplicate) return `${attempt.status} dup`;
    return attempt.stale ? `${attempt.status} stale` : String(attempt.status);
  }
  const error = (attempt.error ?? '').toLowerCase();
  if (error.includes('timeout') || error.includes('timed out')) return 'timeout';
  if (error.includes('refused') || error.includes('econnrefused')) return 'refused';
  return 'no answer';
}

export type Tone = 'ok' | 'warn' | 'bad' | 'info';

export function attemptTone(attempt: DevAttempt): Tone {
  if (attempt.status === null) return 'bad';
  if (attempt.status < 300) return attempt.duplicate || attempt.stale ? 'info' : 'ok';
  if (attempt.status < 500) return 'warn';
  return 'bad';
}

export function statusTone(delivery: DevDelivery): Tone {
  if (delivery.status === 'succeeded') return 'ok';
  if (delivery.status === 'failed') return 'bad';
  return 'info';
}

export function totalAttempts(retryDelays: readonly number[]): number {
  return retryDelays.length + 1;
}

/** The delivery's state in words; `now` comes from the page's shared clock. */
export function stateText(delivery: DevDelivery, now: number, attempts: number): string {
  if (delivery.in_flight) return 'sending…';
  if (delivery.status === 'succeeded') return 'acknowledged';
  if (delivery.status === 'failed') return delivery.retried ? 'given up' : 'failed (not retried)';
  if (delivery.next_attempt_at && delivery.next_attempt !== null) {
    const due = Date.parse(delivery.next_attempt_at) - now;
    return `attempt ${delivery.next_attempt} of ${attempts} ${countdown(due)}`;
  }
  return 'pending';
}

export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2);
}
