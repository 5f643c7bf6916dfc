/**
 * Resolves on SIGINT or SIGTERM, or when `stop` is aborted (a command run in process by a test): how
 * the long-running commands (`sandbox`, `dev`) know to shut down.
 *
 * @example
 * ```ts
 * await untilStopped();
 * await server.close();
 * ```
 */
export function untilStopped(stop?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      stop?.removeEventListener('abort', done);
      resolve();
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
    if (stop?.aborted === true) done();
    else stop?.addEventListener('abort', done);
  });
}
