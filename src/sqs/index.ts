/**
 * `service-webhooks/sqs`: being built (issue 32).
 * @packageDocumentation
 */
export {};
