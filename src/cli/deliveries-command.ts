import { DEFAULT_TEST_KEY, DELIVERY_STATUSES, type Delivery } from '../sandbox/index.js';
import { type Io, numberFlag, parseFlags, stringFlag, UsageError } from './args.js';

/** `service-webhooks deliveries --help`. */
export const DELIVERIES_HELP = `Usage: service-webhooks deliveries [options]

List a running sandbox's deliveries, newest first, one line per attempt.

Options:
  --sandbox URL      the sandbox API address (default http://127.0.0.1:4010/v1)
  --key KEY          test API key or access token (default sk_test_cli, or the SERVICE_API_KEY
                     environment variable); each key sees only its own account's deliveries
  --status STATUS    only pending, succeeded or failed deliveries
  --webhook ID       only deliveries to this registration
  --limit N          at most N deliveries (default 20, maximum 100)
  --events           print the delivered events instead, one JSON object per line (oldest first),
                     each event once even when it went to several webhooks, ready for
                     service-webhooks replay`;

function describe(delivery: Delivery): string[] {
  const head = `${delivery.id}  ${delivery.event_type}  ${delivery.event_id}  → ${delivery.webhook_id}  ${delivery.status}`;
  const next = delivery.next_attempt_at === null ? '' : `  (next attempt ${delivery.next_attempt_at})`;
  const attempts = delivery.attempts.map(
    (attempt) =>
      `    #${attempt.attempt}  ${attempt.started_at}  ${attempt.status ?? `error (${attempt.error})`}  ${attempt.duration_ms} ms`,
  );
  return [`${head}${next}`, ...attempts];
}

/** Run `service-webhooks deliveries`; answers the exit code. */
export async function runDeliveries(argv: readonly string[], io: Io): Promise<number> {
  const { flags } = parseFlags(argv, {
    sandbox: { type: 'string' },
    key: { type: 'string' },
    status: { type: 'string' },
    webhook: { type: 'string' },
    limit: { type: 'string' },
    events: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (flags.help) {
    io.out(DELIVERIES_HELP);
    return 0;
  }
  const base = stringFlag(flags, 'sandbox', false) ?? 'http://127.0.0.1:4010/v1';
  if (!/^https?:\/\//i.test(base) || !URL.canParse(base)) {
    throw new UsageError(`--sandbox must be an http:// or https:// URL, got ${base}.`);
  }
  const query = new URLSearchParams({ limit: String(numberFlag(flags, 'limit', 20, { min: 1, max: 100 })) });
  const status = stringFlag(flags, 'status', false);
  if (status !== undefined) {
    if (!(DELIVERY_STATUSES as readonly string[]).includes(status)) {
      throw new UsageError(`--status must be one of ${DELIVERY_STATUSES.join(', ')}, got ${status}.`);
    }
    query.set('status', status);
  }
  const webhook = stringFlag(flags, 'webhook', false);
  if (webhook !== undefined) query.set('webhook_id', webhook);
  const key = stringFlag(flags, 'key', false) ?? process.env.SERVICE_API_KEY ?? DEFAULT_TEST_KEY;

  let response: Response;
  try {
    response = await fetch(`${base.replace(/\/$/, '')}/sandbox/deliveries?${query}`, {
      headers: { authorization: `Bearer ${key}` },
    });
  } catch (error) {
    const cause =
      error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    io.err(`Could not reach the sandbox at ${base} (${cause}). Is service-webhooks sandbox running?`);
    return 1;
  }
  const body = (await response.json()) as { data?: Delivery[]; error?: { message: string } };
  if (!response.ok || body.data === undefined) {
    io.err(`The sandbox answered ${response.status}: ${body.error?.message ?? 'no deliveries listing'}`);
    return 1;
  }
  if (flags.events) {
    // One event fanned out to several webhooks has one delivery each: print it once, or a replay of
    // the file would send the same event twice.
    const printed = new Set<string>();
    for (const delivery of [...body.data].reverse()) {
      if (printed.has(delivery.event_id)) continue;
      printed.add(delivery.event_id);
      io.out(JSON.stringify(delivery.event));
    }
    return 0;
  }
  if (body.data.length === 0) io.out('No deliveries yet.');
  for (const delivery of body.data) for (const line of describe(delivery)) io.out(line);
  return 0;
}
