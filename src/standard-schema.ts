/**
 * The Standard Schema interface (https://standardschema.dev), version 1: what zod (3.24 and 4),
 * valibot 1 and arktype 2 schemas implement, and what `createWebhooks({ schemas })` accepts. Declared
 * here rather than taken from `@standard-schema/spec`, as the spec invites, so that the package's
 * types need no dependency: any value of this shape is a schema, whoever made it.
 *
 * @example
 * ```ts
 * import type { StandardSchemaV1 } from 'service-webhooks';
 * const amountIsPositive: StandardSchemaV1<unknown, { data: { amount: number } }> = {
 *   '~standard': {
 *     version: 1,
 *     vendor: 'my-app',
 *     validate: (value) => {
 *       const amount = (value as { data?: { amount?: unknown } })?.data?.amount;
 *       return typeof amount === 'number' && amount > 0
 *         ? { value: value as { data: { amount: number } } }
 *         : { issues: [{ message: 'must be a positive number', path: ['data', 'amount'] }] };
 *     },
 *   },
 * };
 * ```
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': StandardSchemaProps<Input, Output>;
}

/**
 * The `~standard` property of a {@link StandardSchemaV1}.
 *
 * @example
 * ```ts
 * const result = await schema['~standard'].validate(event);
 * ```
 */
export interface StandardSchemaProps<Input = unknown, Output = Input> {
  readonly version: 1;
  /** Who made the schema: `zod`, `valibot`, `arktype`, `service-webhooks`, … */
  readonly vendor: string;
  /** Checks a value: its output (possibly transformed) or the issues found. May be async. */
  readonly validate: (value: unknown) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
  /** Types only: what the schema takes and gives, for inference. */
  readonly types?: { readonly input: Input; readonly output: Output } | undefined;
}

/**
 * A {@link StandardSchemaProps.validate} result: the output, or the issues.
 *
 * @example
 * ```ts
 * const result: StandardSchemaResult<number> = { issues: [{ message: 'must be a number', path: ['data', 'amount'] }] };
 * ```
 */
export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: readonly StandardSchemaIssue[] };

/**
 * One problem a schema found.
 *
 * @example
 * ```ts
 * const issue: StandardSchemaIssue = { message: 'must be an e-mail address', path: ['data', { key: 'email' }] };
 * ```
 */
export interface StandardSchemaIssue {
  readonly message: string;
  /** Where: keys from the value's root, each a key or `{ key }`. */
  readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] | undefined;
}

/**
 * The output type of a schema: what a handler receives when the schema is its event type's.
 *
 * @example
 * ```ts
 * type Payment = InferSchemaOutput<typeof paymentSchema>;
 * ```
 */
export type InferSchemaOutput<Schema extends StandardSchemaV1> = NonNullable<
  Schema['~standard']['types']
>['output'];
