/**
 * The tools the dev server's MCP endpoint offers a coding agent: what the dashboard's page does
 * (deliveries and their attempts with the receiver's own report, send, replay, retry now, export, the
 * inbox's dead letters) and a search of the docs. Each tool is one call on the same context the page's
 * API works on, so the page and an agent always see and change the same things.
 *
 * No tool answers with the webhook secret: the secret never goes into a tool's answer, and whatever
 * a receiver put in a report (an error message that quoted it) is redacted in the one place every
 * answer passes, {@link toolAnswer}.
 *
 * @packageDocumentation
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DeadLetterError, EVENT_TYPES, type InboxAdmin } from 'service-webhooks/core';
import * as z from 'zod';
import { ApiError } from '../sandbox/api-errors.js';
import { type DevDelivery, SEND_CASES } from './api-types.js';
import { replay, retryNow } from './dashboard-api.js';
import { DashboardApiError, type DashboardContext } from './dashboard-context.js';
import { fixtureFile, testFile } from './delivery-export.js';
import type { DocsIndex } from './docs-index.js';
import { samples, send } from './send-cases.js';

/** The names of the tools, in the order `tools/list` gives them (the docs page describes each). */
export const MCP_TOOL_NAMES = [
  'get_status',
  'list_deliveries',
  'get_delivery',
  'get_attempt',
  'get_sample_event',
  'send_event',
  'replay_delivery',
  'retry_now',
  'export_delivery',
  'list_dead_letters',
  'get_dead_letter',
  'replay_dead_letter',
  'remove_dead_letter',
  'search_docs',
  'read_doc',
] as const;

/** What stands where the secret was, in an answer that would have held it. */
export const REDACTED_SECRET = '[redacted: the webhook secret]';

/** What the tools work on. */
export interface McpToolsContext {
  readonly dashboard: DashboardContext;
  readonly docs: DocsIndex;
  /** The registration's secret as it is now (it may change while the server runs): redacted from every answer. */
  readonly secret: () => string;
  /** The library's version, for the server's `initialize` answer. */
  readonly version: string;
}

const deliveryId = z.string().min(1).describe('The delivery id (dlv_…), as list_deliveries gives it.');
const jobId = z
  .string()
  .min(1)
  .describe("The dead letter's job id (jobId in list_dead_letters), not the event id.");

/**
 * An MCP server with every tool registered, for one request (the endpoint is stateless: a server and
 * a transport per request, so nothing is kept between an agent's calls but the dev server's own state).
 *
 * @example
 * ```ts
 * const server = createMcpTools({ dashboard, docs: new DocsIndex('dist/docs'), secret: () => secret, version: '0.1.0' });
 * await server.connect(transport);
 * ```
 */
export function createMcpTools(tools: McpToolsContext): McpServer {
  const { dashboard: context, docs } = tools;
  const server = new McpServer(
    { name: 'service-webhooks-dev', version: tools.version },
    {
      instructions:
        'The local dev server of service-webhooks: it signs and delivers events to the receiver under ' +
        'development as the service does (retries included). Send an event, read each attempt with the ' +
        "receiver's own report of it (the handler's error and stack), replay or retry, export a delivery " +
        'as a test, and search the library docs. The webhook secret is never shown.',
    },
  );
  const answer = (run: () => unknown) => toolAnswer(run, tools.secret);
  const readOnly = { readOnlyHint: true, openWorldHint: false } as const;
  const acts = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;
  const find = (id: string): DevDelivery => {
    const delivery = context.account.deliveries.get(id);
    if (delivery === undefined) throw new DashboardApiError(404, 'delivery_not_found', `No delivery ${id}.`);
    return context.view(delivery);
  };

  server.registerTool(
    'get_status',
    {
      description:
        'Where deliveries go, the retry schedule and time scale, the inbox engine if any, the event types, and ' +
        'the report address to start the receiver with (SERVICE_WEBHOOKS_DEV_URL, for devReporter). Call first.',
      inputSchema: {},
      annotations: readOnly,
    },
    () =>
      answer(() => {
        const { secret_hint: _hint, ...state } = context.state();
        return { ...state, event_types: EVENT_TYPES };
      }),
  );

  server.registerTool(
    'list_deliveries',
    {
      description:
        'The latest deliveries, newest first, in brief: id, event, status (pending, succeeded, failed), label ' +
        '(sent, replay, edited, forged_signature, …), the attempts made and the last answer.',
      inputSchema: {
        status: z
          .enum(['pending', 'succeeded', 'failed'])
          .optional()
          .describe('Only deliveries in this state.'),
        event_type: z.string().optional().describe('Only deliveries of this event type.'),
        event_id: z.string().optional().describe('Only deliveries of this event id.'),
        limit: z.number().int().min(1).max(200).default(20).describe('At most this many (default 20).'),
      },
      annotations: readOnly,
    },
    ({ status, event_type, event_id, limit }) =>
      answer(() => {
        const matching = [...context.account.deliveries.values()]
          .reverse()
          .filter(
            (delivery) =>
              (status === undefined || delivery.status === status) &&
              (event_type === undefined || delivery.event_type === event_type) &&
              (event_id === undefined || delivery.event_id === event_id),
          );
        return {
          total: matching.length,
          deliveries: matching.slice(0, limit).map((delivery) => summary(context.view(delivery))),
        };
      }),
  );

  server.registerTool(
    'get_delivery',
    {
      description:
        'One delivery in full: the event as sent, and each attempt with the status, the answer body, the ' +
        "status table's code, and the receiver's own report (outcome, the handler's error with its cause " +
        'and stack, which secret matched) when the receiver runs devReporter.',
      inputSchema: { delivery_id: deliveryId },
      annotations: readOnly,
    },
    ({ delivery_id }) => answer(() => find(delivery_id)),
  );

  server.registerTool(
    'get_attempt',
    {
      description:
        "One attempt of a delivery: the receiver's answer and its own report, the handler's error first.",
      inputSchema: {
        delivery_id: deliveryId,
        attempt: z
          .number()
          .int()
          .min(1)
          .describe('1 for the first attempt; the latest when omitted.')
          .optional(),
      },
      annotations: readOnly,
    },
    ({ delivery_id, attempt }) =>
      answer(() => {
        const delivery = find(delivery_id);
        const found =
          attempt === undefined
            ? delivery.attempts.at(-1)
            : delivery.attempts.find((a) => a.attempt === attempt);
        if (found === undefined) {
          throw new DashboardApiError(
            404,
            'attempt_not_found',
            `Delivery ${delivery_id} has no attempt ${attempt ?? ''}.`,
          );
        }
        return { delivery_id, event_id: delivery.event_id, handler_error: handlerError(found), ...found };
      }),
  );

  server.registerTool(
    'get_sample_event',
    {
      description: 'A realistic event of a type, with a fresh id, to edit and send with send_event (event).',
      inputSchema: { type: z.enum(EVENT_TYPES).describe('The event type.') },
      annotations: readOnly,
    },
    ({ type }) => answer(() => samples(context.issuedSamples)[type]),
  );

  server.registerTool(
    'send_event',
    {
      description:
        'Send an event to the receiver, signed with the registration secret and retried as the service retries: ' +
        'a fresh sample of `type`, or `event` as given (an edited one: any JSON object with a string id and ' +
        'type). `case` sends what a receiver must refuse or survive: forged_signature (expect 401), ' +
        'stale_created (expect 400 event_too_old), concurrent_copies (two copies at once: one handled, the ' +
        'other a duplicate or 409). Answers the deliveries made; read them with get_delivery.',
      inputSchema: {
        type: z.enum(EVENT_TYPES).optional().describe('Send a fresh sample of this type.'),
        event: z
          .record(z.string(), z.unknown())
          .optional()
          .describe('Send this event as it is (takes the place of type).'),
        case: z.enum(SEND_CASES).default('sent').describe('What to send (default sent).'),
      },
      annotations: acts,
    },
    (input) =>
      answer(() => {
        if (input.type === undefined && input.event === undefined) {
          throw new DashboardApiError(400, 'invalid_request', 'Give type or event.');
        }
        return { deliveries: send(context, input).map((delivery) => summary(context.view(delivery))) };
      }),
  );

  server.registerTool(
    'replay_delivery',
    {
      description:
        'Send the event of a delivery again, unchanged (same id): the receiver should answer 200 with ' +
        'x-webhook-duplicate: true once it handled the event. Answers the new delivery.',
      inputSchema: { delivery_id: deliveryId },
      annotations: acts,
    },
    ({ delivery_id }) =>
      answer(() => ({
        deliveries: replay(context, delivery_id).map((delivery) => summary(context.view(delivery))),
      })),
  );

  server.registerTool(
    'retry_now',
    {
      description:
        'Send the scheduled retry of a pending delivery now, rather than after the retry delay (60 s, 5 min, ' +
        '15 min). The attempt keeps its number; a failure is retried on the schedule as before.',
      inputSchema: { delivery_id: deliveryId },
      annotations: acts,
    },
    ({ delivery_id }) =>
      answer(() => {
        retryNow(context, delivery_id);
        return { retried: true, delivery: summary(find(delivery_id)) };
      }),
  );

  server.registerTool(
    'export_delivery',
    {
      description:
        'A delivery as a file for the project: `test` is a vitest test that hands the same event to the receiver ' +
        "through service-webhooks/testing's deliver() (handled once, then a duplicate); `fixture` is the " +
        'exact body and what the receiver answered to each attempt. No signature, no secret.',
      inputSchema: {
        delivery_id: deliveryId,
        as: z.enum(['test', 'fixture']).default('test').describe('test (default) or fixture.'),
      },
      annotations: readOnly,
    },
    ({ delivery_id, as }) =>
      answer(() => {
        const view = find(delivery_id);
        const file = as === 'test' ? testFile(view) : fixtureFile(view);
        return { name: file.name, content: file.text };
      }),
  );

  server.registerTool(
    'list_dead_letters',
    {
      description:
        "The inbox's figures and dead letters (events whose handlers failed every attempt), newest first, " +
        'each with its job id, event id and type, attempts and last error. Needs `service-webhooks dev --inbox URL`.',
      inputSchema: {
        limit: z.number().int().min(1).max(200).default(50).describe('At most this many (default 50).'),
        offset: z.number().int().min(0).default(0).describe('Skip this many.'),
      },
      annotations: readOnly,
    },
    ({ limit, offset }) =>
      answer(async () => {
        const admin = requireInbox(context);
        const [stats, page] = await Promise.all([admin.stats(), admin.list({ limit, offset })]);
        return {
          engine: admin.engine,
          stats,
          total: page.total,
          dead_letters: page.items.map(({ entry: _entry, stacktrace: _stack, ...letter }) => letter),
        };
      }),
  );

  server.registerTool(
    'get_dead_letter',
    {
      description:
        'One dead letter in full: the event as the door received it, the last error and the stacks.',
      inputSchema: { job_id: jobId },
      annotations: readOnly,
    },
    ({ job_id }) =>
      answer(async () => {
        const letter = await requireInbox(context).get(job_id);
        if (letter === undefined)
          throw new DashboardApiError(404, 'dead_letter_not_found', `No dead letter ${job_id}.`);
        return letter;
      }),
  );

  server.registerTool(
    'replay_dead_letter',
    {
      description:
        "Run a dead letter's handlers once more, as a new inbox entry (replaying one dead letter twice runs it once).",
      inputSchema: { job_id: jobId },
      annotations: acts,
    },
    ({ job_id }) => answer(() => requireInbox(context).replay(job_id)),
  );

  server.registerTool(
    'remove_dead_letter',
    {
      description: 'Delete a dead letter for good. Answers whether there was one to remove.',
      inputSchema: { job_id: jobId },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ job_id }) =>
      answer(async () => {
        const admin = requireInbox(context);
        const removed = (await admin.get(job_id)) !== undefined;
        if (removed) await admin.remove(job_id);
        return { removed };
      }),
  );

  server.registerTool(
    'search_docs',
    {
      description:
        "Search the service-webhooks docs (the package's own Markdown pages): adapters, stores, the inbox, " +
        'schemas, ordering, the status table, testing. Answers the best pages with passages; read one whole with read_doc.',
      inputSchema: {
        query: z.string().min(1).describe('Words to look for, e.g. "express raw body" or "redis store ttl".'),
        limit: z.number().int().min(1).max(20).default(5).describe('At most this many pages (default 5).'),
      },
      annotations: readOnly,
    },
    ({ query, limit }) => answer(async () => ({ results: await docs.search(query, limit) })),
  );

  server.registerTool(
    'read_doc',
    {
      description: 'One docs page as Markdown, by the path search_docs gives (e.g. guide/status-codes.md).',
      inputSchema: { path: z.string().min(1).describe('The page path, e.g. stores/redis.md.') },
      annotations: readOnly,
    },
    ({ path }) =>
      answer(async () => {
        const page = await docs.read(path);
        if (page === undefined) {
          throw new DashboardApiError(404, 'page_not_found', `No docs page ${path}; search_docs names them.`);
        }
        return page.text;
      }),
  );

  return server;
}

/** A delivery in a line or two: what a list needs. */
function summary(delivery: DevDelivery) {
  const last = delivery.attempts.at(-1);
  return {
    id: delivery.id,
    event_id: delivery.event_id,
    event_type: delivery.event_type,
    status: delivery.status,
    label: delivery.label,
    created_at: delivery.created_at,
    attempts: delivery.attempts.length,
    last_answer:
      last === undefined
        ? null
        : {
            status: last.status,
            code: last.code,
            duplicate: last.duplicate,
            error: last.error,
            handler_error: handlerError(last),
          },
    next_attempt_at: delivery.next_attempt_at,
    in_flight: delivery.in_flight,
  };
}

/** The handler's own error, when the receiver reported one: the cause under the status table's wrapper. */
function handlerError(attempt: DevDelivery['attempts'][number]): string | null {
  const error = attempt.receiver?.error;
  if (error === undefined) return null;
  const own = error.cause ?? error;
  return `${own.name}: ${own.message}`;
}

function requireInbox(context: DashboardContext): InboxAdmin {
  if (context.inbox === undefined) {
    throw new DashboardApiError(404, 'no_inbox', 'No inbox: start service-webhooks dev with --inbox URL.');
  }
  return context.inbox;
}

/**
 * A tool's result as MCP content: the value as JSON (a string as it is), or the refusal as an error
 * the agent reads (`code: message`). The secret is redacted from either.
 */
export async function toolAnswer(run: () => unknown, secret: () => string): Promise<CallToolResult> {
  const redact = (text: string) => {
    const current = secret();
    return current.length > 0 ? text.split(current).join(REDACTED_SECRET) : text;
  };
  try {
    const value = await run();
    const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
    return { content: [{ type: 'text', text: redact(text) }] };
  } catch (error) {
    // Any other failure (an inbox backend down) is the agent's to read too, as the SDK would make it,
    // but through the redaction.
    const text =
      error instanceof DashboardApiError || error instanceof DeadLetterError
        ? `${error.code}: ${error.message}`
        : error instanceof ApiError
          ? JSON.stringify(error.body)
          : String(error);
    return { isError: true, content: [{ type: 'text', text: redact(text) }] };
  }
}
