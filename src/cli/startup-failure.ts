import { DashboardPageMissingError } from '../dashboard/static-assets.js';
import { DataFileError } from '../sandbox/index.js';

/**
 * The one-line message for a server command (`sandbox`, `dev`) that could not start for a reason the
 * user can fix (a data file it cannot use, a port in use, a page never built), or `undefined` for
 * anything else, which the command lets through as a crash.
 *
 * @example
 * ```ts
 * const message = startupFailure(error, 4010, '127.0.0.1');
 * if (message === undefined) throw error;
 * io.err(message);
 * ```
 */
export function startupFailure(error: unknown, port: number, host: string): string | undefined {
  if (error instanceof DataFileError || error instanceof DashboardPageMissingError) return error.message;
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    return `Port ${port} on ${host} is in use; pass --port with another port (0 picks a free one).`;
  }
  return undefined;
}

/** The time of day, to the millisecond (UTC), that the server commands put before each line they log. */
export function timestamp(): string {
  return new Date().toISOString().slice(11, 23);
}
