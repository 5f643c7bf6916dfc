/**
 * Test helpers for receivers and stores: sign bodies as the service does, build realistic events,
 * deliver them without HTTP, and check a store against the IdempotencyStore contract: by examples
 * (`storeConformanceSuite`), and against a model of its rules, for linearizability (`checkStore`,
 * `storeModelSuite`); and check an inbox engine against the inbox contract (`inboxConformanceSuite`).
 *
 * @example
 * ```ts
 * import { createTestEvent, deliver } from 'service-webhooks/testing';
 * const response = await deliver(webhooks, createTestEvent('user.created'), { secret });
 * ```
 * @packageDocumentation
 */
export { SIGNATURE_HEADER, signPayload, signPayloadWeb } from 'service-webhooks/core';
export {
  type CheckStoreOptions,
  checkStore,
  type StoreCheckReport,
  StoreModelError,
} from './check-store.js';
export { createTestEvent, type TestEventOverrides } from './create-test-event.js';
export { type DeliverOptions, deliver } from './deliver.js';
export {
  INBOX_RULES,
  InboxConformanceError,
  type InboxConformanceOptions,
  type InboxRule,
  inboxConformanceSuite,
} from './inbox-conformance-suite.js';
export type { InboxUnderTest, WorkerUnderTest, WorkerUnderTestOptions } from './inbox-under-test.js';
export {
  checkLinearizable,
  type KeyVerdict,
  type LinearizabilityOptions,
  type ObservedCall,
  UNKNOWN,
} from './linearizability.js';
export { InjectedStoreFault, type StoreCheckContext } from './store-check-context.js';
export {
  StoreConformanceError,
  type StoreConformanceOptions,
  storeConformanceSuite,
} from './store-conformance-suite.js';
export {
  ABSENT,
  type ModelRecord,
  type ModelStep,
  modelSteps,
  SequentialStoreModel,
  type StoreAnswer,
  type StoreCall,
} from './store-model.js';
export { type StoreModelSuiteOptions, storeModelSuite } from './store-model-suite.js';
