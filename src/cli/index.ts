/**
 * The command-line module of service-webhooks, for tests and scripts that want the sandbox in-process.
 * Not part of the package root: users reach it through the `service-webhooks` bin.
 *
 * @example
 * ```ts
 * import { startSandbox } from '../src/cli/index.js';
 * const sandbox = await startSandbox({ port: 0, allowHttp: true, timeScale: 0.001 });
 * ```
 * @packageDocumentation
 */
export type {
  Delivery,
  DeliveryAttempt,
  DeliveryStatus,
  Payment,
  Project,
  User,
  WebhookRegistration,
} from './account.js';
export { DataFileError } from './data-file.js';
export { RETRY_DELAYS_SECONDS } from './delivery-scheduler.js';
export { type JwtClaims, signJwt, verifyJwt } from './jwt.js';
export type { OAuthClient } from './oauth-clients.js';
export { run } from './run.js';
export { type Sandbox, type SandboxOptions, startSandbox } from './sandbox.js';
export type { TokenResponse } from './token-issuer.js';
export { MAX_PAGE_LIMIT } from './validation.js';
