import { withDeadline } from './deadline.js';
import { ConfigurationError, EventSchemaError, type EventSchemaIssue, SchemaTimeoutError } from './errors.js';
import type { Eventual } from './eventual.js';
import type { StandardSchemaIssue, StandardSchemaProps, StandardSchemaResult } from './standard-schema.js';
import type { TimeoutQueue } from './timeout-queue.js';
import type { WebhookEvent } from './types.js';
import type { Accepted } from './verified-delivery.js';

/** A schema key: an event type, `resource.action` (no wildcard: a schema checks one type's shape). */
const EVENT_TYPE = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;

type Validate = StandardSchemaProps['validate'];

/** What checking an event comes to: the event to claim, or the refusal to answer. */
export type SchemaCheck = Accepted | EventSchemaError | SchemaTimeoutError;

/**
 * The `schemas` option, checked once: each event type's Standard Schema `validate`. A verified event
 * of a type with a schema goes on as the schema's output, or not at all: a schema that reports issues,
 * throws, rejects or changes the event's id or type stops it before the claim (nothing is recorded,
 * so the sender's retry is checked again). Synchronous schemas keep the delivery synchronous.
 */
export class EventSchemaChecks {
  readonly #validators: ReadonlyMap<string, Validate>;

  constructor(schemas: unknown) {
    if (typeof schemas !== 'object' || schemas === null || Array.isArray(schemas)) {
      throw new ConfigurationError(
        '`schemas` must be an object of Standard Schemas by event type, such as { "payment.succeeded": z.object({ … }) }.',
      );
    }
    const validators = new Map<string, Validate>();
    for (const [type, schema] of Object.entries(schemas)) {
      if (!EVENT_TYPE.test(type)) {
        throw new ConfigurationError(
          `\`schemas\` has a key "${type}": keys are event types such as "payment.succeeded" (a schema checks one type, so no wildcards).`,
        );
      }
      const standard = (schema as { '~standard'?: Partial<StandardSchemaProps> } | null)?.['~standard'];
      if (standard?.version !== 1 || typeof standard.validate !== 'function') {
        throw new ConfigurationError(
          `\`schemas["${type}"]\` is not a Standard Schema (version 1): zod ≥ 3.24, valibot 1, arktype 2 and service-webhooks/schemas give one.`,
        );
      }
      validators.set(type, standard.validate);
    }
    this.#validators = validators;
  }

  /**
   * The event as its type's schema gives it (with its verified id kept apart), or why not.
   *
   * An async schema runs under `deadlines` (the receiver's `storeTimeoutMs`), not the handlers' budget:
   * it runs before the claim, in the part of the sender's 30 s the store's calls share, and is meant to
   * be a quick check (a lookup at most), so one that hangs is treated like a store that hangs: answered
   * 503 for the sender to retry. `handlerTimeoutMs` (25 s by default) spent here and again on the
   * handlers would outlast the sender's timeout. A synchronous schema cannot hang, so it arms no timer:
   * this is the path every delivery with a schema takes.
   */
  accept(accepted: Accepted, deadlines: TimeoutQueue): Eventual<SchemaCheck> {
    const { event } = accepted;
    const validate = this.#validators.get(event.type);
    if (validate === undefined) return accepted;
    let result: ReturnType<Validate>;
    try {
      result = validate(event);
    } catch (cause) {
      return threw(event, cause);
    }
    if (!(result instanceof Promise)) return outcome(accepted, result);
    // `checked` never rejects (what the schema settles with, or rejects with, becomes a value), so
    // what the deadline rejects with is its miss.
    const checked = result.then(
      (settled) => outcome(accepted, settled),
      (cause: unknown) => threw(event, cause),
    );
    return withDeadline(checked, deadlines, `The schema of ${event.type}`).catch(
      (cause: unknown) => new SchemaTimeoutError(event.type, event.id, deadlines.ms, { cause }),
    );
  }
}

function outcome(accepted: Accepted, result: StandardSchemaResult<unknown>): Accepted | EventSchemaError {
  const { event } = accepted;
  let value: unknown;
  let issues: EventSchemaIssue[] | undefined;
  try {
    if (result.issues !== undefined) {
      if (!Array.isArray(result.issues)) throw new TypeError('`issues` is not a list');
      issues = Array.from(result.issues, toIssue);
    } else {
      value = result.value;
      // A schema that checks without changing (the first-party ones) gives the event itself back.
      if (value === event) return accepted;
      issues = changedIdentity(event, value);
    }
  } catch (cause) {
    // A result that is not one (no object, issues that are not a list, a getter that throws).
    return mismatch(event, `the schema gave no Standard Schema result (${describe(cause)})`, cause);
  }
  if (issues !== undefined) return new EventSchemaError(event.type, event.id, issues);
  // The id the claim is made under is the verified one, whatever the schema's output holds.
  return { ...accepted, event: value as WebhookEvent, eventId: event.id };
}

/**
 * The verified id and type are what route and deduplicate the event. An output that carries others
 * would hand a handler an event that says it is another (a `user.created` a router sends down the
 * payments path): a mismatch. An output that carries neither (a transform to `data` alone) keeps
 * being handled under the verified ones.
 */
function changedIdentity(event: WebhookEvent, value: unknown): EventSchemaIssue[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { id, type } = value as { id?: unknown; type?: unknown };
  const idChanged = id !== undefined && id !== event.id;
  const typeChanged = type !== undefined && type !== event.type;
  // No list unless something changed: a transform's output takes this path on every delivery.
  if (!idChanged && !typeChanged) return undefined;
  const issues: EventSchemaIssue[] = [];
  if (idChanged) issues.push(changed('id', event.id, id));
  if (typeChanged) issues.push(changed('type', event.type, type));
  return issues;
}

function changed(field: 'id' | 'type', verified: string, output: unknown): EventSchemaIssue {
  const shown = typeof output === 'string' ? JSON.stringify(output) : `a ${typeof output}`;
  return {
    path: [field],
    message: `the schema's output changes the verified ${field} ${JSON.stringify(verified)} to ${shown}; the verified id and type are what route and deduplicate the event`,
  };
}

function threw(event: WebhookEvent, cause: unknown): EventSchemaError {
  return mismatch(event, `the schema threw: ${describe(cause)}`, cause);
}

function mismatch(event: WebhookEvent, message: string, cause: unknown): EventSchemaError {
  return new EventSchemaError(event.type, event.id, [{ path: [], message }], { cause });
}

/**
 * What a thrown value says, whatever it is: a schema may throw anything, and reading it must not throw
 * in turn (`String` of a null-prototype object, a `toString` or `message` getter that throws, a
 * revoked Proxy, which even `instanceof` trips on).
 */
function describe(thrown: unknown): string {
  try {
    if (thrown instanceof Error) {
      const { message } = thrown;
      if (typeof message === 'string') return message;
    }
    return String(thrown);
  } catch {
    return `a thrown ${thrown === null ? 'null' : typeof thrown} that cannot be read as text`;
  }
}

function toIssue(issue: StandardSchemaIssue): EventSchemaIssue {
  // A plain array of keys: a library's path may be an array subclass with state of its own (arktype's).
  const path = Array.from(issue.path ?? [], (segment) =>
    toKey(typeof segment === 'object' && segment !== null ? segment.key : segment),
  );
  const { message } = issue;
  return { path, message: typeof message === 'string' ? message : describe(message) };
}

/** A key as the error's message can print it: what is not a property key is described instead. */
function toKey(key: unknown): PropertyKey {
  return typeof key === 'string' || typeof key === 'number' || typeof key === 'symbol' ? key : describe(key);
}
