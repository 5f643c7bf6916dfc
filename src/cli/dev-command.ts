import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SENDER_SCHEDULE } from 'service-webhooks/core';
import { type DevServer, startDevServer } from '../dashboard/dev-server.js';
import {
  isLoopbackHost,
  isTestKey,
  privateTempFolder,
  privateTempFolderPath,
  UnsafeDataFileError,
} from '../sandbox/index.js';
import { type Flags, type Io, numberFlag, parseFlags, stringFlag, UsageError } from './args.js';
import { ATTEMPT_TIMEOUT_SECONDS, SCHEDULE_IN_WORDS, wrap } from './help-text.js';
import { ENGINES, inboxAddress, type OpenedAdmin, openInboxAdmin, redactUrl } from './inbox-engines.js';
import { startupFailure, timestamp } from './startup-failure.js';
import { untilStopped } from './until-stopped.js';
import { VERSION } from './version.js';

/** `service-webhooks dev --help`. */
export const DEV_HELP = `Usage: service-webhooks dev --forward URL [options]

${wrap(`Look at your webhooks: a local sandbox that delivers signed events to your receiver at URL as the
service does (${SCHEDULE_IN_WORDS}), and a dashboard of every delivery, live, in the browser: send
and replay events, edit and resend them, send the cases a receiver must refuse, see your receiver's own
account of each attempt, export one as a fixture or a test, and look after your inbox's dead letters. It
runs until Ctrl-C.`)}

Options:
  --forward URL          your receiver's webhook address (required), e.g. http://localhost:3000/webhooks
  --secret SECRET        the webhook secret your receiver verifies with (default: the one saved from
                         the last run, else a new whsec_…; see --print-secret)
  --print-secret         print the secret at start (otherwise only its last four characters)
  --port PORT            port of the dashboard and the sandbox API (default 4010; 0 picks a free one)
  --host HOST            address to listen on (default 127.0.0.1; anything else exposes the sandbox to
                         your network; every route, the sandbox API's included, still answers
                         only requests for 127.0.0.1, localhost or HOST itself)
  --time-scale FACTOR    multiply the retry delays, e.g. 0.01 for ${SENDER_SCHEDULE.retryDelaysSeconds.map((s) => s / 100).join(', ')} s (default 1)
  --attempt-timeout SEC  timeout of one attempt (default ${ATTEMPT_TIMEOUT_SECONDS}, not scaled)
  --data FILE            keep the history in FILE (default: node_modules/.cache/service-webhooks/dev.json
                         when ./node_modules exists, else a file in your own folder of the system's
                         temporary folder, service-webhooks-<uid>, made 0700)
  --in-memory            keep no history across restarts
  --api-key KEY          a fixed key for the sandbox API, sk_test_… (default: a new random one at
                         each start, printed), for scripts that cannot read the banner
  --history N            deliveries kept, the oldest dropped first (default 1000)
  --token TOKEN          a fixed token for the dashboard's API and the MCP endpoint, 16 characters at
                         least (default: $SERVICE_WEBHOOKS_DEV_TOKEN, else a new random one at each
                         start), so a coding agent's MCP configuration keeps working across restarts

The inbox (a receiver that acknowledges at once and processes later; see service-webhooks inbox):
  --inbox URL            show its figures and dead letters: redis://… (BullMQ), postgres://… (pg-boss),
                         an SQS queue URL, amqp://… (RabbitMQ) or nats://… (NATS)
  --engine NAME          ${ENGINES.join(', ')}, when the URL cannot tell
  --queue NAME, --prefix PREFIX, --schema NAME, --dead-letter-queue URL, --endpoint URL
                         as for service-webhooks inbox

Coding agents (Claude Code, Cursor, any MCP client): the MCP endpoint at /mcp (Streamable HTTP)
reads deliveries and attempts, sends, replays, retries now, exports tests, looks after dead letters
and searches the docs, with the header x-service-webhooks-dev-token: TOKEN (see --token).

Your receiver's side (which handlers' outcome, how long, the error and its stack, which secret
matched): add logger: devReporter() from service-webhooks/dev to createWebhooks, and start the
receiver with SERVICE_WEBHOOKS_DEV_URL set to the report address printed at start. Without that
variable devReporter does nothing.`;

/** Where the dashboard's page was built: beside the bundled CLI (dist/dashboard), or dist/ from a clone. */
function assetsFolder(): string {
  const candidates = [
    fileURLToPath(new URL('./dashboard/', import.meta.url)),
    fileURLToPath(new URL('../../dist/dashboard/', import.meta.url)),
  ];
  return candidates.find((folder) => existsSync(join(folder, 'index.html'))) ?? candidates[0]!;
}

/** The docs' Markdown pages the MCP tool search_docs reads: the package's dist/docs, or a clone's docs/. */
function docsFolder(): string | undefined {
  const candidates = [
    fileURLToPath(new URL('./docs/', import.meta.url)),
    fileURLToPath(new URL('../../dist/docs/', import.meta.url)),
    fileURLToPath(new URL('../../docs/', import.meta.url)),
  ];
  return candidates.find((folder) => existsSync(join(folder, 'index.md')));
}

/** The environment variable a fixed dashboard and MCP token may come from (see `--token`). */
export const DEV_TOKEN_ENV = 'SERVICE_WEBHOOKS_DEV_TOKEN';
/** A fixed token must be at least this long: it is all that stands between a local process and the dashboard. */
const MIN_TOKEN_LENGTH = 16;

function tokenFlag(flags: Flags): string | undefined {
  const token = stringFlag(flags, 'token', false) ?? (process.env[DEV_TOKEN_ENV] || undefined);
  if (token !== undefined && (token.length < MIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token))) {
    throw new UsageError(
      `--token (or ${DEV_TOKEN_ENV}) must be ${MIN_TOKEN_LENGTH} printable characters at least, without spaces.`,
    );
  }
  return token;
}

/**
 * The history's default file: with the project's other caches when it has node_modules (so it is
 * never committed), else one per working folder in this user's own folder of the temporary folder
 * (see `privateTempFolder`: the shared folder's names are predictable, and the file holds the secret).
 */
export function defaultDataFile(cwd: string): string {
  const modules = join(cwd, 'node_modules');
  if (existsSync(modules)) return join(modules, '.cache', 'service-webhooks', 'dev.json');
  const folder = createHash('sha256').update(resolve(cwd)).digest('hex').slice(0, 12);
  return join(privateTempFolderPath(), `dev-${folder}.json`);
}

function forwardFlag(flags: Flags): string {
  const forward = stringFlag(flags, 'forward', true);
  let url: URL;
  try {
    url = new URL(forward);
  } catch {
    throw new UsageError(`--forward must be an absolute http:// or https:// URL, got ${forward}.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--forward must be an http:// or https:// URL, got ${forward}.`);
  }
  return forward;
}

async function openInbox(flags: Flags, io: Io): Promise<OpenedAdmin | undefined | null> {
  if (flags.inbox === undefined && flags.engine === undefined) return null;
  const address = inboxAddress({ ...flags, url: flags.inbox }, process.env);
  return openInboxAdmin(address, flags, io.err);
}

/**
 * Run `service-webhooks dev` until SIGINT or SIGTERM, or until `stop` is aborted (to run it in
 * process, with the page from `assets` when not the built one); answers the exit code.
 */
export async function runDev(
  argv: readonly string[],
  io: Io,
  stop?: AbortSignal,
  assets: string = assetsFolder(),
): Promise<number> {
  const { flags } = parseFlags(argv, {
    forward: { type: 'string' },
    secret: { type: 'string' },
    'print-secret': { type: 'boolean' },
    port: { type: 'string' },
    host: { type: 'string' },
    'time-scale': { type: 'string' },
    'attempt-timeout': { type: 'string' },
    data: { type: 'string' },
    'in-memory': { type: 'boolean' },
    'api-key': { type: 'string' },
    history: { type: 'string' },
    token: { type: 'string' },
    inbox: { type: 'string' },
    engine: { type: 'string' },
    queue: { type: 'string' },
    prefix: { type: 'string' },
    schema: { type: 'string' },
    'dead-letter-queue': { type: 'string' },
    endpoint: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (flags.help) {
    io.out(DEV_HELP);
    return 0;
  }
  const forward = forwardFlag(flags);
  const port = numberFlag(flags, 'port', 4010, { min: 0, max: 65_535 });
  const host = stringFlag(flags, 'host', false) ?? '127.0.0.1';
  if (flags['in-memory'] === true && flags.data !== undefined)
    throw new UsageError('Give --data or --in-memory, not both.');
  const dataFile =
    flags['in-memory'] === true
      ? undefined
      : (stringFlag(flags, 'data', false) ?? defaultDataFile(process.cwd()));
  if (dataFile !== undefined && flags.data === undefined) {
    if (dirname(dataFile) !== privateTempFolderPath()) mkdirSync(dirname(dataFile), { recursive: true });
    else {
      try {
        await privateTempFolder();
      } catch (error) {
        if (!(error instanceof UnsafeDataFileError)) throw error;
        io.err(error.message);
        return 1;
      }
    }
  }
  const historyLimit = numberFlag(flags, 'history', 1000, { min: 1, max: 100_000 });
  const apiKey = stringFlag(flags, 'api-key', false);
  if (apiKey !== undefined && !isTestKey(apiKey)) {
    throw new UsageError(`--api-key must be a test key (sk_test_ then letters, digits or _), got ${apiKey}.`);
  }
  const timeScale = numberFlag(flags, 'time-scale', 1, { min: 0, integer: false });
  const attemptTimeoutMs =
    numberFlag(flags, 'attempt-timeout', ATTEMPT_TIMEOUT_SECONDS, { min: 0.001, integer: false }) * 1000;
  const token = tokenFlag(flags);
  const inbox = await openInbox(flags, io);
  if (inbox === undefined) return 1;

  let dev: DevServer;
  try {
    dev = await startDevServer({
      forward,
      secret: stringFlag(flags, 'secret', false),
      port,
      host,
      timeScale,
      attemptTimeoutMs,
      dataFile,
      historyLimit,
      apiKey,
      assetsFolder: assets,
      docsFolder: docsFolder(),
      version: VERSION,
      ...(token !== undefined && { token }),
      inbox: inbox?.admin,
      // The attempts, as the sandbox prints them, and the reports nothing matched; the page's own
      // requests would drown them.
      log: (line) => {
        if (line.startsWith('delivery ') || line.startsWith('report ')) io.out(`[${timestamp()}] ${line}`);
      },
    });
  } catch (error) {
    await inbox?.close();
    const message = startupFailure(error, port, host);
    if (message === undefined) throw error;
    io.err(message);
    return 1;
  }
  const secretShown =
    flags['print-secret'] === true ? dev.secret : `…${dev.secret.slice(-4)} (--print-secret shows it)`;
  io.out(
    [
      `service-webhooks dev: dashboard at ${dev.url}`,
      `  delivering to   ${forward} (every event type; ${timeScale === 1 ? SCHEDULE_IN_WORDS : `retries × ${timeScale}`})`,
      `  secret          ${secretShown}`,
      `  receiver side   SERVICE_WEBHOOKS_DEV_URL=${dev.reportUrl}`,
      '                  with logger: devReporter() from service-webhooks/dev',
      `  sandbox API     ${dev.apiUrl} (Bearer ${dev.apiKey}${apiKey === undefined ? ', new at each start' : ''})`,
      `  MCP (agents)    ${dev.mcpUrl} (header x-service-webhooks-dev-token: ${dev.token}${token === undefined ? ', new at each start' : ''})`,
      `  history         ${dataFile ?? 'in memory'} (the last ${historyLimit})`,
      ...(inbox === null
        ? []
        : [`  inbox           ${inbox.admin.engine} at ${redactUrl(String(flags.inbox ?? ''))}`]),
      ...(isLoopbackHost(host)
        ? []
        : [`  warning: listening on ${host}, not loopback: anyone who can reach it can send events`]),
      '  stop with Ctrl-C',
    ].join('\n'),
  );
  await untilStopped(stop);
  await dev.close();
  await inbox?.close();
  io.out('service-webhooks dev stopped');
  return 0;
}
