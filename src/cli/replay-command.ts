import { readFile } from 'node:fs/promises';
import type { PostResult } from '../sandbox/index.js';
import { type Io, parseFlags, SENDING_OPTIONS } from './args.js';
import { ATTEMPT_TIMEOUT_SECONDS } from './help-text.js';
import { planFromFlags, sendAttempts, summarize } from './send-attempts.js';

/** `service-webhooks replay --help`. */
export const REPLAY_HELP = `Usage: service-webhooks replay FILE --url URL --secret SECRET [options]

Send recorded events, one JSON object per line (blank lines and lines starting with # are skipped),
in file order, each signed as the service does. The recorded bytes are sent as they are.

Options:
  --url URL            receiver address (required)
  --secret SECRET      webhook secret (or the WEBHOOK_SECRET environment variable)
  --redate             set each event's created to now (receivers refuse events older than their
                       maxEventAgeSeconds, 24 hours by default); the body is re-serialised
  --repeat N           send each event N times (default 1)
  --concurrency C      at most C sends of one event at once (default 1)
  --timeout SECONDS    per attempt (default ${ATTEMPT_TIMEOUT_SECONDS})

Exit code 0 when every attempt was answered 2xx, 1 otherwise (or when a line is not an event), 2 on a
usage error or a FILE that cannot be read.`;

type Line = { number: number; body: string; label: string } | { number: number; problem: string };

function readLine(text: string, number: number, redate: boolean): Line {
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    return { number, problem: 'not JSON' };
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    return { number, problem: 'not a JSON object' };
  }
  const { id, type } = event as { id?: unknown; type?: unknown };
  const label = `${String(type)} ${String(id)}`;
  const body = redate ? JSON.stringify({ ...event, created: Math.floor(Date.now() / 1000) }) : text;
  return { number, body, label };
}

/** Run `service-webhooks replay`; answers the exit code. */
export async function runReplay(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseFlags(argv, { ...SENDING_OPTIONS, redate: { type: 'boolean' } }, true);
  if (flags.help) {
    io.out(REPLAY_HELP);
    return 0;
  }
  const plan = planFromFlags(flags);
  const [file, ...extra] = positionals;
  if (file === undefined || extra.length > 0) {
    io.err('replay takes exactly one FILE. Run service-webhooks replay --help.');
    return 2;
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : (code ?? String(error));
    io.err(`Cannot read ${file}: ${reason}.`);
    return 2;
  }
  const lines = text
    .split(/\r?\n/)
    .map((line, index) => ({ line: line.trim(), number: index + 1 }))
    .filter(({ line }) => line !== '' && !line.startsWith('#'))
    .map(({ line, number }) => readLine(line, number, flags.redate === true));

  const results: PostResult[] = [];
  let invalid = 0;
  for (const line of lines) {
    if ('problem' in line) {
      invalid++;
      io.err(`line ${line.number}: skipped, ${line.problem}`);
      continue;
    }
    io.out(`line ${line.number}: ${line.label} → ${plan.url}`);
    results.push(...(await sendAttempts(line.body, plan, io)));
  }
  const summary = summarize(results);
  io.out(
    `${lines.length - invalid} events, ${summary.line}${invalid > 0 ? `; ${invalid} lines skipped` : ''}`,
  );
  return summary.ok && invalid === 0 ? 0 : 1;
}
