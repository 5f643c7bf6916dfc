/**
 * The sandbox: a local emulator of the whole service (its API, OAuth server, rate limits and webhook
 * deliveries), for tests and scripts that want it in-process. Not part of the package root: users
 * reach it through `service-webhooks sandbox`, the one CLI command built on it.
 *
 * @example
 * ```ts
 * import { startSandbox } from '../src/sandbox/index.js';
 *
 * const sandbox = await startSandbox({ port: 0, allowHttp: true, timeScale: 0.001 });
 * // … register a webhook at `${sandbox.url}/webhooks`, create a user, watch the deliveries …
 * await sandbox.close();
 * ```
 * @packageDocumentation
 */
export { DEFAULT_TEST_KEY, isTestKey } from './api-keys.js';
export { DataFileError } from './data-file.js';
export { type JwtClaims, signJwt, verifyJwt } from './jwt.js';
export { isLoopbackHost } from './loopback.js';
export { checkClient, type OAuthClient } from './oauth/clients.js';
export type { TokenResponse } from './oauth/token-issuer.js';
export { MAX_PAGE_LIMIT } from './pagination.js';
export { privateTempFolder, privateTempFolderPath, UnsafeDataFileError } from './private-files.js';
export {
  DELIVERY_STATUSES,
  type Delivery,
  type DeliveryAttempt,
  type DeliveryStatus,
  type Payment,
  type Project,
  type User,
  type WebhookRegistration,
} from './resources.js';
export { type Sandbox, type SandboxOptions, startSandbox } from './sandbox.js';
export { type PostOptions, type PostResult, postSigned } from './signed-post.js';
