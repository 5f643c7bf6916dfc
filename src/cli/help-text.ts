/**
 * What the commands' `--help` texts say about the sender's schedule, built from `SENDER_SCHEDULE` so
 * the help cannot drift from what the receiver's defaults and the sandbox's deliveries use.
 *
 * @packageDocumentation
 */
import { SENDER_SCHEDULE } from 'service-webhooks/core';

/** The column help paragraphs wrap at, the width the hand-wrapped texts were written to. */
export const HELP_WIDTH = 102;

/**
 * The sender's timeout per attempt in seconds: the default of `--timeout` and `--attempt-timeout`.
 *
 * @example
 * ```ts
 * `--timeout SECONDS    per attempt (default ${ATTEMPT_TIMEOUT_SECONDS})`; // "… (default 30)"
 * ```
 */
export const ATTEMPT_TIMEOUT_SECONDS = SENDER_SCHEDULE.attemptTimeoutMs / 1000;

/**
 * `items` as a sentence lists them: `1, 5 and 15`.
 *
 * @example
 * ```ts
 * listInWords([1, 5, 15]); // '1, 5 and 15'
 * ```
 */
export function listInWords(items: readonly (string | number)[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/**
 * Delays given in seconds, in words: in minutes when every delay is whole minutes, else in seconds.
 *
 * @example
 * ```ts
 * delaysInWords([60, 300, 900]); // '1, 5 and 15 minutes'
 * delaysInWords([30, 90]); // '30 and 90 seconds'
 * ```
 */
export function delaysInWords(seconds: readonly number[]): string {
  const inMinutes = seconds.every((delay) => delay % 60 === 0);
  return inMinutes
    ? `${listInWords(seconds.map((delay) => delay / 60))} minutes`
    : `${listInWords(seconds)} seconds`;
}

/**
 * The sender's schedule in one phrase.
 *
 * @example
 * ```ts
 * SCHEDULE_IN_WORDS; // '30 s per attempt; retries after 1, 5 and 15 minutes'
 * ```
 */
export const SCHEDULE_IN_WORDS = `${ATTEMPT_TIMEOUT_SECONDS} s per attempt; retries after ${delaysInWords(SENDER_SCHEDULE.retryDelaysSeconds)}`;

/**
 * `text` re-flowed to lines of at most `width` characters, breaking only between words, so a
 * paragraph with numbers built in still wraps as if written by hand.
 *
 * @example
 * ```ts
 * wrap('one two three', 7); // 'one two\nthree'
 * ```
 */
export function wrap(text: string, width: number = HELP_WIDTH): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((part) => part !== '')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines.join('\n');
}
