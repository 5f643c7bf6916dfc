import { EVENT_TYPES, isKnownEventType } from 'service-webhooks/core';
import { createTestEvent } from 'service-webhooks/testing';
import { type Io, parseFlags, SENDING_OPTIONS, stringFlag, UsageError } from './args.js';
import { dashboardFor } from './dev-sent.js';
import { ATTEMPT_TIMEOUT_SECONDS } from './help-text.js';
import { planFromFlags, sendAttempts, summarize } from './send-attempts.js';

/** `service-webhooks send --help`. */
export const SEND_HELP = `Usage: service-webhooks send --url URL --secret SECRET --type TYPE [options]

Build a realistic event, sign it as the service does (x-service-signature) and POST it.

Options:
  --url URL            receiver address (required)
  --secret SECRET      webhook secret (or the WEBHOOK_SECRET environment variable)
  --type TYPE          one of: ${EVENT_TYPES.join(', ')}
  --data JSON          fields merged into the event's data, e.g. '{"email":"grace@example.com"}'
  --id ID              event id (default: a fresh evt_… id)
  --livemode           mark the event livemode: true (default false, as sandbox events)
  --repeat N           send the same event N times (default 1)
  --concurrency C      at most C sends at once (default 1)
  --timeout SECONDS    per attempt (default ${ATTEMPT_TIMEOUT_SECONDS}, as the service)

While service-webhooks dev runs and SERVICE_WEBHOOKS_DEV_URL is set (the report address it prints),
each attempt is also shown on its dashboard, with the receiver's report joined to it.

Exit code 0 when every attempt was answered 2xx, 1 otherwise, 2 on a usage error.`;

function parseData(raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    throw new UsageError('--data must be JSON, such as \'{"email":"grace@example.com"}\'.');
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new UsageError('--data must be a JSON object.');
  }
  return data as Record<string, unknown>;
}

/** Run `service-webhooks send`; answers the exit code. */
export async function runSend(argv: readonly string[], io: Io): Promise<number> {
  const { flags } = parseFlags(argv, {
    ...SENDING_OPTIONS,
    type: { type: 'string' },
    data: { type: 'string' },
    id: { type: 'string' },
    livemode: { type: 'boolean' },
  });
  if (flags.help) {
    io.out(SEND_HELP);
    return 0;
  }
  const plan = planFromFlags(flags);
  const type = stringFlag(flags, 'type', true);
  if (!isKnownEventType(type))
    throw new UsageError(`--type must be one of ${EVENT_TYPES.join(', ')}; got ${type}.`);
  const data = parseData(stringFlag(flags, 'data', false));
  const id = stringFlag(flags, 'id', false);
  const event = createTestEvent(type, {
    livemode: flags.livemode === true,
    ...(id !== undefined && { id }),
    ...(data !== undefined && { data }),
  });
  const body = JSON.stringify(event);
  const times = plan.repeat === 1 ? '' : ` (${plan.repeat} times, ${plan.concurrency} at a time)`;
  io.out(`Sending ${event.type} ${event.id}${times} to ${plan.url}`);
  io.out(body);
  const dashboard = dashboardFor(process.env, io.err);
  const summary = summarize(
    await sendAttempts(
      body,
      plan,
      io,
      dashboard && ((result, at) => dashboard.tell(event, plan.url, result, at)),
    ),
  );
  io.out(summary.line);
  return summary.ok ? 0 : 1;
}
