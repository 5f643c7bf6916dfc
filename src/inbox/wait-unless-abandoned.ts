/**
 * Wait `ms`, or less if `abandon` aborts first: `true` when the time passed, `false` when abandoned (a
 * forced close, which leaves the delivery to come back by the engine's own means). The inbox's one
 * wait, for a copy due within a moment and for flow control's short holds; no timer outlives an abort.
 *
 * @example
 * ```ts
 * if (!(await waitUnlessAbandoned(250, abandon))) return { kind: 'not-due' };
 * ```
 */
export function waitUnlessAbandoned(ms: number, abandon: AbortSignal | undefined): Promise<boolean> {
  if (abandon?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const stop = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      abandon?.removeEventListener('abort', stop);
      resolve(true);
    }, ms);
    abandon?.addEventListener('abort', stop, { once: true });
  });
}
