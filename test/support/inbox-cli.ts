/**
 * What the `service-webhooks inbox` tests of every engine (BullMQ, pg-boss, SQS) and the dev
 * dashboard's inbox panel set up alike: the command run in process, and a handler that fails until
 * the test says otherwise, so its events are dead-lettered first and replayed after.
 */
import type { AnyWebhookEvent } from 'service-webhooks';
import { runInbox } from '../../src/cli/inbox-command.js';

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
