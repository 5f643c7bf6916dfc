import type * as Bullmq from '../bullmq/index.js';
import { type Flags, type Io, numberFlag, parseFlags, stringFlag, UsageError } from './args.js';

/** `service-webhooks inbox --help`. */
export const INBOX_HELP = `Usage: service-webhooks inbox <stats|list|show|replay|remove> [ID] [options]

Look after the inbox of a receiver that acknowledges fast and processes later (service-webhooks/bullmq):
its figures, and the events that failed their last attempt (the dead-letter list).

Subcommands:
  stats              events waiting, running, waiting for a retry and dead-lettered; the wait of the
                     next event to run
  list               dead-lettered events, newest first, one line each: job id, type, event id,
                     attempts, when it failed, the last error
  show ID            one dead-lettered event: the event, its attempts, timestamps and last error
  replay ID          run the handlers of a dead-lettered event once more (a new job, with a fresh
                     attempt budget), even though its id was seen; it leaves the list
  replay --all       replay every dead-lettered event (at most --limit)
  remove ID          drop a dead-lettered event for good

Options:
  --redis URL        the inbox's Redis (default the REDIS_URL environment variable, else
                     redis://127.0.0.1:6379)
  --queue NAME       the BullMQ queue name (default service-webhooks-inbox)
  --prefix PREFIX    BullMQ's key prefix (default bull)
  --offset N         list: skip the N newest (default 0)
  --limit N          list: at most N (default 20, maximum 1000); replay --all: at most N
  --json             print JSON (one object per line for list)

Exit code 0 when done, 1 when Redis cannot be reached or the event is not dead-lettered, 2 on a
usage error.`;

const SUBCOMMANDS = ['stats', 'list', 'show', 'replay', 'remove'] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

/** Run `service-webhooks inbox`; answers the exit code. */
export async function runInbox(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseFlags(
    argv,
    {
      redis: { type: 'string' },
      queue: { type: 'string' },
      prefix: { type: 'string' },
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
  const redis = stringFlag(flags, 'redis', false) ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (!/^rediss?:\/\//i.test(redis))
    throw new UsageError(`--redis must be a redis:// or rediss:// URL, got ${redis}.`);
  const limit = numberFlag(flags, 'limit', command === 'list' ? 20 : Number.MAX_SAFE_INTEGER, {
    min: 1,
    ...(command === 'list' ? { max: 1000 } : {}),
  });
  const offset = numberFlag(flags, 'offset', 0, { min: 0 });

  const loaded = await loadPeers(io);
  if (loaded === undefined) return 1;
  const { bullmq } = loaded;
  const queueName = stringFlag(flags, 'queue', false);
  const prefix = stringFlag(flags, 'prefix', false);
  let admin: Bullmq.InboxAdmin;
  try {
    // The admin's own client from the URL: a command ends (a few connection attempts, then the error).
    admin = bullmq.inboxAdmin({
      connection: redis,
      ...(queueName === undefined ? {} : { queueName }),
      ...(prefix === undefined ? {} : { prefix }),
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const json = flags.json === true;
  try {
    switch (command) {
      case 'stats':
        printStats(await admin.stats(), json, io, bullmq.formatDuration);
        return 0;
      case 'list':
        printList(await admin.list({ offset, limit }), json, io);
        return 0;
      case 'show': {
        const letter = await admin.get(id!);
        if (letter === undefined) {
          io.err(`No dead-lettered event has the job id ${id}. Run service-webhooks inbox list.`);
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
              : `replayed ${replay.eventId}: job ${replay.replayOf} → ${replay.jobId} (replay id ${replay.replayId})`,
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
    if (error instanceof bullmq.DeadLetterError) {
      io.err(`${error.message} Run service-webhooks inbox list.`);
      return 1;
    }
    io.err(
      `Could not reach the inbox at ${redactUrl(redis)}: ${error instanceof Error ? error.message : String(error)}`,
    );
    return 1;
  } finally {
    await admin.close().catch(() => {});
  }
}

function checkId(command: Subcommand, id: string | undefined, flags: Flags): void {
  if (command === 'replay' && flags.all) {
    if (id !== undefined) throw new UsageError('Give either a job id or --all, not both.');
    return;
  }
  if (flags.all) throw new UsageError('--all goes with replay only.');
  const needsId = command === 'show' || command === 'replay' || command === 'remove';
  if (needsId && id === undefined)
    throw new UsageError(`${command} needs the job id, as inbox list prints it.`);
  if (!needsId && id !== undefined) throw new UsageError(`${command} takes no job id.`);
}

/**
 * `service-webhooks/bullmq` and ioredis, loaded only by this command (the bullmq subpath by its package
 * name, so the bin never bundles it): BullMQ and ioredis are optional peers, and the other commands
 * must run without them.
 */
async function loadPeers(io: Io): Promise<{ bullmq: typeof Bullmq } | undefined> {
  try {
    // ioredis too: the admin makes its client with it, and the message below should name both.
    const [bullmq] = await Promise.all([import('service-webhooks/bullmq'), import('ioredis')]);
    return { bullmq: bullmq as typeof Bullmq };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    io.err(
      `service-webhooks inbox needs the optional packages bullmq and ioredis: npm install bullmq ioredis (${error instanceof Error ? error.message : String(error)}).`,
    );
    return undefined;
  }
}

function printStats(stats: Bullmq.InboxStats, json: boolean, io: Io, duration: (ms: number) => string): void {
  if (json) {
    io.out(JSON.stringify(stats));
    return;
  }
  io.out(`waiting       ${stats.waiting}`);
  io.out(`running       ${stats.active}`);
  io.out(`retrying      ${stats.delayed}`);
  io.out(`dead-lettered ${stats.deadLettered}`);
  io.out(`next waited   ${stats.oldestWaitingMs === undefined ? '-' : duration(stats.oldestWaitingMs)}`);
}

function printList(page: Bullmq.DeadLetterPage, json: boolean, io: Io): void {
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

function summary(letter: Bullmq.DeadLetter) {
  const { entry: _entry, stacktrace: _stacktrace, ...rest } = letter;
  return rest;
}

function printLetter(letter: Bullmq.DeadLetter, json: boolean, io: Io): void {
  if (json) {
    io.out(JSON.stringify(letter));
    return;
  }
  const time = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());
  io.out(
    `job           ${letter.jobId}${letter.replayOf === undefined ? '' : ` (replay of ${letter.replayOf})`}`,
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

/** The URL without its password, for messages. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
