/**
 * The method by which a store offers the receiver its synchronous calls (`SynchronousCalls` in
 * synchronous-store.ts). It answers `undefined` when the offer does not hold (a subclass or a test spy
 * replaced a method), and is asked once, when a receiver is created. Internal to the package: stores of
 * users keep the promise contract. A registered symbol in a file of its own, so that the root's
 * `MemoryStore`, built into another file than the core (`service-webhooks/core`), offers its calls
 * under the same key, and its declarations pull in nothing else of the core.
 */
export const SYNCHRONOUS_CALLS: unique symbol = Symbol.for('service-webhooks.synchronousCalls');
