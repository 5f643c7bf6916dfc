import type { DeadLetter, DeadLetterPage, InboxStats } from 'service-webhooks/core';
import { type Flags, type Io, numberFlag, parseFlags, UsageError } from './args.js';
import { ENGINES, inboxAddress, openInboxAdmin, redactUrl } from './inbox-engines.js';

/** `service-webhooks inbox --help`. */
export const INBOX_HELP = `Usage: service-webhooks inbox <stats|list|show|replay|remove> [ID] [options]

Look after the inbox of a receiver that acknowledges fast and processes later, on any of its engines
(service-webhooks/bullmq, /pg-boss, /sqs, /rabbitmq, /nats): its figures, and the events that failed their last attempt
(the dead-letter list). Every engine prints the same columns.

Subcommands:
  stats              events waiting, running, waiting for a retry and dead-lettered; of those waiting
                     for a retry, the ones a worker's flow control deferred (throttled) and the ones
                     waiting out a downstream's 429 (rate-limited); the wait of the next event to
                     run (where the engine can tell: - where it cannot)
  list               dead-lettered events, newest first, one line each: id, type, event id,
                     attempts, when it failed, the last error
  show ID            one dead-lettered event: the event, its attempts, timestamps and last error
  replay ID          run the handlers of a dead-lettered event once more (a new entry, with a fresh
                     attempt budget), even though its id was seen; it leaves the list
  replay --all       replay every dead-lettered event (at most --limit)
  remove ID          drop a dead-lettered event for good

Where the inbox is:
  --url URL          redis://… (BullMQ), postgres://… (pg-boss), an SQS queue URL (https://…) or
                     amqp://… (RabbitMQ) or nats://… (NATS JetStream); the engine follows from it.
                     Without --url: REDIS_URL, else redis://127.0.0.1:6379
  --engine NAME      ${ENGINES.join(', ')}: say it when the URL cannot (then its default address is
                     REDIS_URL, DATABASE_URL, SQS_QUEUE_URL, AMQP_URL or NATS_URL)
  --redis URL        the same as --url for BullMQ (kept from earlier versions)
  --queue NAME       BullMQ's, pg-boss's or RabbitMQ's queue, or NATS's stream (default
                     service-webhooks-inbox)
  --prefix PREFIX    BullMQ's key prefix (default bull)
  --schema NAME      pg-boss's schema (default pgboss)
  --dead-letter-queue URL
                     SQS: the dead-letter queue (default: the queue's redrive policy's)
  --endpoint URL     SQS: another endpoint (LocalStack, an emulator); credentials and region come
                     from the AWS SDK's usual sources

Output:
  --offset N         list: skip the N newest (default 0)
  --limit N          list: at most N (default 20, maximum 1000); replay --all: at most N
  --json             print JSON (one object per line for list)

Exit code 0 when done, 1 when the inbox cannot be reached or the event is not dead-lettered, 2 on a
usage error.`;

const SUBCOMMANDS = ['stats', 'list', 'show', 'replay', 'remove'] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

/** Run `service-webhooks inbox`; answers the exit code. */
export async function runInbox(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseFlags(
    argv,
    {
      url: { type: 'string' },
      engine: { type: 'string' },
      redis: { type: 'string' },
      queue: { type: 'string' },
      prefix: { type: 'string' },
      schema: { type: 'string' },
      'dead-letter-queue': { type: 'string' },
      endpoint: { type: 'string' },
      offset: { type: 'string' },
      limit: { type: 'string' },
      all: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    true,
  );
  if (flags.help) {
    io.out(INBOX_HELP);
    return 0;
  }
  const [subcommand, id, ...extra] = positionals;
  if (subcommand === undefined) throw new UsageError(`Name a subcommand: ${SUBCOMMANDS.join(', ')}.`);
  if (!(SUBCOMMANDS as readonly string[]).includes(subcommand)) {
    throw new UsageError(`Unknown subcommand ${subcommand}; use one of ${SUBCOMMANDS.join(', ')}.`);
  }
  if (extra.length > 0) throw new UsageError(`Unexpected ${extra.join(' ')}.`);
  const command = subcommand as Subcommand;
  checkId(command, id, flags);
  const address = inboxAddress(flags, process.env);
  const limit = numberFlag(flags, 'limit', command === 'list' ? 20 : Number.MAX_SAFE_INTEGER, {
    min: 1,
    ...(command === 'list' ? { max: 1000 } : {}),
  });
  const offset = numberFlag(flags, 'offset', 0, { min: 0 });

  let opened: Awaited<ReturnType<typeof openInboxAdmin>>;
  try {
    opened = await openInboxAdmin(address, flags, io.err);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    io.err(`Could not reach the ${address.engine} inbox at ${redactUrl(address.url)}: ${messageOf(error)}`);
    return 1;
  }
  if (opened === undefined) return 1;
  const { admin } = opened;
  const { DeadLetterError, formatDuration } = await import('service-webhooks/core');
  const json = flags.json === true;
  try {
    switch (command) {
      case 'stats':
        printStats(await admin.stats(), json, io, formatDuration);
        return 0;
      case 'list':
        printList(await admin.list({ offset, limit }), json, io);
        return 0;
      case 'show': {
        const letter = await admin.get(id!);
        if (letter === undefined) {
          io.err(`No dead-lettered event has the id ${id}. Run service-webhooks inbox list.`);
          return 1;
        }
        printLetter(letter, json, io);
        return 0;
      }
      case 'replay': {
        const replays = flags.all ? await admin.replayAll({ limit }) : [await admin.replay(id!)];
        for (const replay of replays) {
          io.out(
            json
              ? JSON.stringify(replay)
              : `replayed ${replay.eventId}: ${replay.replayOf} → ${replay.jobId} (replay id ${replay.replayId})`,
          );
        }
        if (!json && flags.all) io.out(`${replays.length} dead-lettered events replayed.`);
        return 0;
      }
      case 'remove':
        await admin.remove(id!);
        io.out(json ? JSON.stringify({ removed: id }) : `removed ${id}`);
        return 0;
    }
  } catch (error) {
    if (error instanceof DeadLetterError) {
      io.err(`${error.message} Run service-webhooks inbox list.`);
      return 1;
    }
    io.err(`Could not reach the ${address.engine} inbox at ${redactUrl(address.url)}: ${messageOf(error)}`);
    return 1;
  } finally {
    await opened.close().catch(() => {});
  }
}

function checkId(command: Subcommand, id: string | undefined, flags: Flags): void {
  if (command === 'replay' && flags.all) {
    if (id !== undefined) throw new UsageError('Give either an id or --all, not both.');
    return;
  }
  if (flags.all) throw new UsageError('--all goes with replay only.');
  const needsId = command === 'show' || command === 'replay' || command === 'remove';
  if (needsId && id === undefined)
    throw new UsageError(`${command} needs the dead letter's id, as inbox list prints it.`);
  if (!needsId && id !== undefined) throw new UsageError(`${command} takes no id.`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function printStats(stats: InboxStats, json: boolean, io: Io, duration: (ms: number) => string): void {
  if (json) {
    io.out(JSON.stringify(stats));
    return;
  }
  io.out(`waiting       ${stats.waiting}`);
  io.out(`running       ${stats.active}`);
  io.out(`retrying      ${stats.delayed}`);
  // Part of `retrying`: the events flow control deferred, and those waiting out a downstream's 429.
  io.out(`throttled     ${stats.throttled ?? '-'}`);
  io.out(`rate-limited  ${stats.rateLimited ?? '-'}`);
  io.out(`dead-lettered ${stats.deadLettered}`);
  io.out(`next waited   ${stats.oldestWaitingMs === undefined ? '-' : duration(stats.oldestWaitingMs)}`);
}

function printList(page: DeadLetterPage, json: boolean, io: Io): void {
  if (json) {
    for (const letter of page.items) io.out(JSON.stringify(summary(letter)));
    return;
  }
  if (page.items.length === 0) {
    io.out(
      page.total === 0
        ? 'No dead-lettered events.'
        : `No dead-lettered events past ${page.offset} (${page.total} in all).`,
    );
    return;
  }
  io.out(
    `${page.total} dead-lettered events, newest first; ${page.offset + 1} to ${page.offset + page.items.length}:`,
  );
  for (const letter of page.items) {
    const failed = letter.failedAt === undefined ? '-' : new Date(letter.failedAt).toISOString();
    io.out(
      `${letter.jobId}  ${letter.eventType}  ${letter.eventId}  ${letter.attempts} attempts  ${failed}  ${firstLine(letter.lastError)}`,
    );
  }
}

function summary(letter: DeadLetter) {
  const { entry: _entry, stacktrace: _stacktrace, ...rest } = letter;
  return rest;
}

function printLetter(letter: DeadLetter, json: boolean, io: Io): void {
  if (json) {
    io.out(JSON.stringify(letter));
    return;
  }
  const time = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());
  io.out(
    `id            ${letter.jobId}${letter.replayOf === undefined ? '' : ` (replay of ${letter.replayOf})`}`,
  );
  io.out(`event         ${letter.eventType} ${letter.eventId}`);
  io.out(`attempts      ${letter.attempts}`);
  io.out(`received      ${time(letter.receivedAt)}`);
  io.out(`queued        ${time(letter.enqueuedAt)}`);
  io.out(`last attempt  ${time(letter.lastAttemptAt)}`);
  io.out(`dead-lettered ${time(letter.failedAt)}`);
  io.out(`last error    ${letter.lastError}`);
  const stack = letter.stacktrace.at(-1);
  if (stack) io.out(`stack         ${stack.split('\n').join('\n              ')}`);
  io.out(`event body    ${JSON.stringify(letter.entry.event)}`);
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}
