import type { Accepted } from './delivery-verifier.js';
import { ConfigurationError, EventSchemaError, type EventSchemaIssue } from './errors.js';
import type { Eventual } from './eventual.js';
import type { StandardSchemaIssue, StandardSchemaProps, StandardSchemaResult } from './standard-schema.js';
import type { WebhookEvent } from './types.js';

/** A schema key: an event type, `resource.action` (no wildcard: a schema checks one type's shape). */
const EVENT_TYPE = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;

type Validate = StandardSchemaProps['validate'];

/**
 * The `schemas` option, checked once: each event type's Standard Schema `validate`. A verified event
 * of a type with a schema goes on as the schema's output, or not at all: a schema that reports issues,
 * throws or rejects stops it before the claim (nothing is recorded, so the sender's retry is checked
 * again). Synchronous schemas keep the delivery synchronous.
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

  /** The event as its type's schema gives it (with its verified id kept apart), or why not. */
  accept(accepted: Accepted): Eventual<Accepted | EventSchemaError> {
    const { event } = accepted;
    const validate = this.#validators.get(event.type);
    if (validate === undefined) return accepted;
    let result: ReturnType<Validate>;
    try {
      result = validate(event);
    } catch (cause) {
      return threw(event, cause);
    }
    return result instanceof Promise
      ? result.then(
          (settled) => outcome(accepted, settled),
          (cause: unknown) => threw(event, cause),
        )
      : outcome(accepted, result);
  }
}

function outcome(accepted: Accepted, result: StandardSchemaResult<unknown>): Accepted | EventSchemaError {
  const { event } = accepted;
  if (result.issues !== undefined)
    return new EventSchemaError(event.type, event.id, result.issues.map(toIssue));
  // A schema that checks without changing (the first-party ones) gives the event itself back.
  if (result.value === event) return accepted;
  // The id the claim is made under is the verified one, whatever the schema's output holds.
  return { ...accepted, event: result.value as WebhookEvent, eventId: event.id };
}

function threw(event: WebhookEvent, cause: unknown): EventSchemaError {
  const message = `the schema threw: ${cause instanceof Error ? cause.message : String(cause)}`;
  return new EventSchemaError(event.type, event.id, [{ path: [], message }], { cause });
}

function toIssue(issue: StandardSchemaIssue): EventSchemaIssue {
  // A plain array of keys: a library's path may be an array subclass with state of its own (arktype's).
  const path = Array.from(issue.path ?? [], (segment) =>
    typeof segment === 'object' && segment !== null ? segment.key : segment,
  );
  return { path, message: issue.message };
}
