import type { BackgroundErrorListener, WebhookError } from 'service-webhooks/core';

/**
 * The listeners a store or an inbox engine was given through `onBackgroundError`, one per receiver that
 * uses it. Bundled into each store and engine subpath, like store-encoding.ts.
 *
 * Before any receiver listens (the store was made but no receiver yet), or when a listener throws, the
 * failure is said on stderr: it must never vanish, nor become an unhandled 'error' event.
 */
export class BackgroundErrors {
  readonly #listeners = new Set<BackgroundErrorListener>();

  listen(listener: BackgroundErrorListener): void {
    if (typeof listener !== 'function') throw new TypeError('onBackgroundError needs a function.');
    this.#listeners.add(listener);
  }

  report(error: WebhookError): void {
    if (this.#listeners.size === 0) {
      // The cause's stack only: a driver's error can carry its whole connection object.
      const { cause } = error;
      console.error(
        `[service-webhooks] ${error.name} (${error.code}): ${error.message}`,
        cause instanceof Error ? (cause.stack ?? cause.message) : (cause ?? ''),
      );
      return;
    }
    for (const listener of this.#listeners) {
      try {
        listener(error);
      } catch (cause) {
        console.error('[service-webhooks] A background error listener threw.', cause);
      }
    }
  }
}
