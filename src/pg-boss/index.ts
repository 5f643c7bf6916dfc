/**
 * `service-webhooks/pg-boss`: being built (issue 32).
 * @packageDocumentation
 */
export {};
