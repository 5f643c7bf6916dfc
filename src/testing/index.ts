/**
 * Test helpers for receivers and stores: sign bodies as the service does, build realistic events,
 * deliver them without HTTP, and check a store against the IdempotencyStore contract.
 *
 * @example
 * ```ts
 * import { createTestEvent, deliver } from 'service-webhooks/testing';
 * const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
 * ```
 * @packageDocumentation
 */
export { SIGNATURE_HEADER, signPayload, signPayloadWeb } from 'service-webhooks/core';
export { createTestEvent, type TestEventOverrides } from './create-test-event.js';
export { type DeliverOptions, deliver } from './deliver.js';
export {
  StoreConformanceError,
  type StoreConformanceOptions,
  storeConformanceSuite,
} from './store-conformance-suite.js';
