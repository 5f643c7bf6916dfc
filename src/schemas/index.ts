/**
 * `service-webhooks/schemas`: Standard Schemas for the nine event types the service documents, with no
 * dependency. Each checks the envelope and what the spec documents for its resource (`object` and `id`
 * everywhere; a user's `name` and `email`) and lets unknown fields through. Pass them as they are, or
 * as the start of your own map, replacing a type's schema with one of zod, valibot or arktype that
 * checks the fields your account sends.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 * import { eventSchemas } from 'service-webhooks/schemas';
 * import { z } from 'zod';
 *
 * const webhooks = createWebhooks({
 *   secret: process.env.WEBHOOK_SECRET!,
 *   schemas: {
 *     ...eventSchemas,
 *     'payment.succeeded': z.object({ data: z.object({ object: z.literal('payment'), id: z.string(), amount: z.number() }) }).loose(),
 *   },
 * });
 * webhooks.on('payment.succeeded', (event) => event.data.amount); // number
 * ```
 *
 * @module
 */
import type { StandardSchemaV1, WebhookEventMap, WebhookEventName } from 'service-webhooks/core';
import { documentedEvent } from './documented-event.js';

/**
 * A schema for each documented event type, whose output is that type's event as the library types it
 * (declaration merging included). Named, so the declarations refer to the core by package name.
 *
 * @example
 * ```ts
 * const schemas: DocumentedEventSchemas = eventSchemas;
 * ```
 */
export type DocumentedEventSchemas = {
  readonly [Type in WebhookEventName]: StandardSchemaV1<unknown, WebhookEventMap[Type]>;
};

/**
 * The nine documented event types' schemas, by type.
 *
 * @example
 * ```ts
 * const result = await eventSchemas['user.created']['~standard'].validate(JSON.parse(body));
 * if (result.issues) console.error(result.issues);
 * ```
 */
export const eventSchemas: DocumentedEventSchemas = Object.freeze({
  'user.created': documentedEvent('user.created', 'user', ['name', 'email']),
  'user.updated': documentedEvent('user.updated', 'user', ['name', 'email']),
  'user.deleted': documentedEvent('user.deleted', 'user', ['name', 'email']),
  'project.created': documentedEvent('project.created', 'project'),
  'project.updated': documentedEvent('project.updated', 'project'),
  'project.deleted': documentedEvent('project.deleted', 'project'),
  'payment.succeeded': documentedEvent('payment.succeeded', 'payment'),
  'payment.failed': documentedEvent('payment.failed', 'payment'),
  'payment.refunded': documentedEvent('payment.refunded', 'payment'),
});
