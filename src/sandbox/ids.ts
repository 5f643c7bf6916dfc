import { randomBytes } from 'node:crypto';

/**
 * A prefix-style opaque identifier, such as `usr_1f0c…`, in the style the service documents. 12 random
 * bytes make collisions irrelevant for a sandbox.
 */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
