/**
 * What the `service-webhooks inbox` tests of every engine (BullMQ, pg-boss, SQS) and the dev
 * dashboard's inbox panel set up alike: the command run in process, and a handler that fails until
 * the test says otherwise, so its events are dead-lettered first and replayed after.
 */
import type { AnyWebhookEvent } from 'service-webhooks';
import { expect } from 'vitest';
import { runInbox } from '../../src/cli/inbox-command.js';
import { waitUntil } from './wait-until.js';

/** What one run of the command gave: its exit code and the lines it printed to each stream. */
export interface CliRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/**
 * `service-webhooks inbox` run in process as the CLI's dispatcher runs it, with `target()`'s flags
 * (where the inbox is: `--redis … --queue …`, `--url …`) after the test's own.
 */
export function inboxCommand(target: () => readonly string[]): (...argv: string[]) => Promise<CliRun> {
  return async (...argv) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runInbox([...argv, ...target()], {
      out: (line) => out.push(line),
      err: (line) => err.push(line),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
}

/**
 * A CRM that refuses every event while `failing` (the handler throws `crm.example refused <what>`,
 * so with one attempt the event is dead-lettered), and records the ids it handled once it no longer
 * fails (a replay's run).
 */
export class RefusingCrm {
  failing = true;
  readonly handled: string[] = [];

  /** `refused` names the event in the error: its email for the CLI's columns, its id by default. */
  constructor(readonly refused: (event: AnyWebhookEvent) => string = (event) => event.id) {}

  readonly handler = (event: AnyWebhookEvent): void => {
    if (this.failing) throw new Error(`crm.example refused ${this.refused(event)}`);
    this.handled.push(event.id);
  };
}

/** Names a user event by its email, as the CLI's dead-letter columns show the error. */
export const byEmail = (event: AnyWebhookEvent): string => String((event.data as { email?: unknown }).email);

/**
 * The `inbox` command's round trip on an engine whose queue holds two dead letters of `user.created`
 * refused by `crm`: stats, list, show, replay (once: a second replay of the same id fails) and remove
 * print the same columns on every engine, and the list ends empty with one event handled. The
 * throttled figures read 0, or `-` on an engine that cannot tell.
 */
export async function expectCliRoundTrip(
  cli: (...argv: string[]) => Promise<CliRun>,
  crm: RefusingCrm,
): Promise<void> {
  const stats = await cli('stats');
  expect(stats.code).toBe(0);
  expect(stats.out).toMatch(
    /^waiting {7}0\nrunning {7}0\nretrying {6}0\nthrottled {5}[0-]\nrate-limited {2}[0-]\ndead-lettered 2\nnext waited {3}-$/,
  );

  const list = await cli('list');
  expect(list.code).toBe(0);
  const lines = list.out.split('\n');
  expect(lines[0]).toBe('2 dead-lettered events, newest first; 1 to 2:');
  for (const line of lines.slice(1)) {
    expect(line).toMatch(
      /^\S+ {2}user\.created {2}evt_\S+ {2}1 attempts {2}\d{4}-\d\d-\d\dT\S+Z {2}handler_failed: crm\.example refused/,
    );
  }
  const [newest, oldest] = lines.slice(1).map((line) => line.split('  ')[0]!);

  const show = await cli('show', newest!);
  expect(show.code).toBe(0);
  expect(show.out).toMatch(/^id {12}\S+/);
  expect(show.out).toContain('last error    handler_failed: crm.example refused');
  expect(show.out).toContain('"type":"user.created"');

  crm.failing = false;
  const replay = await cli('replay', newest!);
  expect(replay.code).toBe(0);
  expect(replay.out).toMatch(/^replayed evt_\S+: \S+ → \S+ \(replay id \S+\)$/);
  await waitUntil('the replay to run', () => crm.handled.length === 1);
  const again = await cli('replay', newest!);
  expect(again.code).toBe(1);
  expect(again.err).toMatch(/Run service-webhooks inbox list\.$/);

  expect(await cli('remove', oldest!)).toMatchObject({ code: 0, out: `removed ${oldest}` });
  expect((await cli('list')).out).toBe('No dead-lettered events.');
  expect(crm.handled).toHaveLength(1);
}
