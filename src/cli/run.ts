import { type Io, UsageError } from './args.js';
import { runDeliveries } from './deliveries-command.js';
import { runDev } from './dev-command.js';
import { runInbox } from './inbox-command.js';
import { runReplay } from './replay-command.js';
import { runSandbox } from './sandbox-command.js';
import { runSend } from './send-command.js';
import { VERSION } from './version.js';

/** `service-webhooks --help`. */
export const MAIN_HELP = `Usage: service-webhooks <command> [options]

Commands:
  dev         look at your webhooks: a local dashboard of deliveries, retries and dead letters,
              with a sandbox that delivers to your receiver
  send        build, sign and POST one event to a receiver (--repeat, --concurrency)
  replay      send recorded events from a file, one JSON object per line
  sandbox     run a local stand-in for the service's sandbox API, delivering webhooks
  deliveries  list a running sandbox's deliveries and their attempts (or its events, for replay)
  inbox       an inbox's figures and dead-letter list: stats, list, show, replay, remove (BullMQ, pg-boss, SQS, RabbitMQ, NATS)

Run service-webhooks <command> --help for the options of each, service-webhooks --version for the
version.`;

const COMMANDS: Readonly<Record<string, (argv: readonly string[], io: Io) => Promise<number>>> = {
  dev: runDev,
  send: runSend,
  replay: runReplay,
  sandbox: runSandbox,
  deliveries: runDeliveries,
  inbox: runInbox,
};

/**
 * Run the CLI with `argv` (without node and the script); answers the exit code: 0 done, 1 failed,
 * 2 a usage error (printed with a pointer to the command's `--help`).
 *
 * @example
 * ```ts
 * const code = await run(['deliveries', '--status', 'failed'], {
 *   out: (line) => console.log(line),
 *   err: (line) => console.error(line),
 * });
 * ```
 */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    io.err(MAIN_HELP);
    return 2;
  }
  if (command === '--help' || command === '-h' || command === 'help') {
    io.out(MAIN_HELP);
    return 0;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    io.out(VERSION);
    return 0;
  }
  const runCommand = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (runCommand === undefined) {
    io.err(`Unknown command ${command}.\n\n${MAIN_HELP}`);
    return 2;
  }
  try {
    return await runCommand(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message} Run service-webhooks ${command} --help.`);
      return 2;
    }
    throw error;
  }
}
