/**
 * What every part of the bench shares: realistic signed deliveries of an exact size, and the small
 * statistics used to turn interleaved rounds into ratios.
 */
import { createHmac } from 'node:crypto';

export const SECRET = 'whsec_bench_3f9c1a7e5b2d4c6e8a0b1c2d';
export const EVENT_TYPE = 'user.created';
export const PATH = '/webhooks';
export const QUICK = process.env.BENCH_QUICK === '1';

/** The sizes of section 1 and the size every HTTP run uses. */
export const SIZES = [256, 2048, 65_536, 1_048_576] as const;
export const HTTP_BODY_BYTES = 2048;

const ID_DIGITS = 20;

/** `evt_` and 24 characters, as the service's ids; distinct for every `n` below 10^20. */
export function eventId(nonce: string, n: number): string {
  return `evt_${nonce}${String(n).padStart(ID_DIGITS, '0')}`;
}

/** A 4-character run nonce, so ids never repeat across runs that share a store (Redis). */
export function runNonce(): string {
  return Math.floor(Math.random() * 36 ** 4)
    .toString(36)
    .padStart(4, '0');
}

export function sign(body: Uint8Array | string): string {
  const hmac = createHmac('sha256', SECRET);
  return `sha256=${(typeof body === 'string' ? hmac.update(body, 'utf8') : hmac.update(body)).digest('hex')}`;
}

/**
 * A delivery body of exactly `size` bytes around one id: `prefix + id + suffix`. The padding is
 * realistic JSON (many small fields), not one long string, so `JSON.parse` does representative work.
 */
export interface BodyTemplate {
  readonly size: number;
  readonly prefix: string;
  readonly suffix: string;
}

export function bodyTemplate(size: number): BodyTemplate {
  const created = Math.floor(Date.now() / 1000);
  const prefix = '{"id":"';
  const idLength = eventId('0000', 0).length;
  const head = `","type":"${EVENT_TYPE}","created":${created},"livemode":false,"pending_webhooks":1,"request":null,"data":{"object":"user","id":"usr_5f1c9b2e7a4d","name":"Ada","email":"ada@example.com","metadata":[`;
  const tail = '],"note":"';
  const end = '"}}';
  const fixed = prefix.length + idLength + head.length + tail.length + end.length;
  const items: string[] = [];
  let length = fixed;
  for (let i = 0; ; i++) {
    const item = `${i === 0 ? '' : ','}{"key":"attr_${String(i).padStart(6, '0')}","value":"value of attribute ${i}","enabled":${i % 2 === 0},"score":${(i * 7919) % 100_000}}`;
    if (length + item.length + 8 > size) break;
    items.push(item);
    length += item.length;
  }
  if (length > size) throw new Error(`A ${size}-byte body cannot hold the envelope (${length} bytes).`);
  const suffix = `${head}${items.join('')}${tail}${'n'.repeat(size - length)}${end}`;
  return { size, prefix, suffix };
}

export function bodyText(template: BodyTemplate, id: string): string {
  return template.prefix + id + template.suffix;
}

/** One signed delivery, with the headers every receiver under test reads (ours and GitHub's). */
export interface Delivery {
  readonly id: string;
  readonly body: Buffer;
  readonly text: string;
  readonly signature: string;
}

/** `count` signed deliveries with distinct ids, built once before anything is timed. */
export function deliveries(size: number, count: number, nonce = runNonce()): Delivery[] {
  const template = bodyTemplate(size);
  const list: Delivery[] = [];
  for (let n = 0; n < count; n++) {
    const id = eventId(nonce, n);
    const text = bodyText(template, id);
    const body = Buffer.from(text, 'utf8');
    list.push({ id, body, text, signature: sign(body) });
  }
  if (list[0] && list[0].body.byteLength !== size)
    throw new Error(`Body is ${list[0].body.byteLength} bytes.`);
  return list;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The `q` quantile (0 to 1) by nearest rank: a value that was measured, never an interpolation. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** The median over rounds of the ratio a/b, each ratio taken within one round (so drifting load cancels). */
export function medianRatio(a: readonly number[], b: readonly number[]): number {
  return median(a.map((value, i) => value / b[i]!));
}

/**
 * The order of variants in round `round`: every rotation, then every rotation reversed, so none always
 * runs first or last (two variants go AB, BA, BA, AB, ...; three go through all six orders).
 */
export function rotated<T>(list: readonly T[], round: number): T[] {
  const shift = round % list.length;
  const order = [...list.slice(shift), ...list.slice(0, shift)];
  return Math.floor(round / list.length) % 2 === 1 ? order.reverse() : order;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1_048_576) return `${(bytes / 1_048_576).toFixed(bytes % 1_048_576 === 0 ? 0 : 1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(bytes % 1024 === 0 ? 0 : 1)} KiB`;
  return `${bytes} B`;
}
