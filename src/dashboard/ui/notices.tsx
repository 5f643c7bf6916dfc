import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { message } from './api.js';

/** How every action tells the outcome: failures in the alert region, successes in the polite status. */
export interface Notify {
  readonly ok: (text: string) => void;
  readonly fail: (error: unknown, doing?: string) => void;
}

/** `n` changes on every notice, so the same message twice in a row is shown (and announced) again. */
interface Notice {
  readonly text: string;
  readonly n: number;
}

const NONE: Notice = { text: '', n: 0 };
/** Successes fade on their own; errors stay until dismissed, since they may need reading twice. */
const STATUS_MS = 6000;

export function useNotices(): { notify: Notify; error: Notice; status: Notice; dismiss: () => void } {
  const [error, setError] = useState(NONE);
  const [status, setStatus] = useState(NONE);
  const ok = useCallback((text: string) => {
    setError(NONE);
    setStatus((previous) => ({ text, n: previous.n + 1 }));
  }, []);
  const fail = useCallback((cause: unknown, doing?: string) => {
    setStatus(NONE);
    const text = doing ? `${doing}: ${message(cause)}` : message(cause);
    setError((previous) => ({ text, n: previous.n + 1 }));
  }, []);
  useEffect(() => {
    if (!status.text) return undefined;
    const timer = setTimeout(() => setStatus(NONE), STATUS_MS);
    return () => clearTimeout(timer);
  }, [status]);
  const dismiss = useCallback(() => setError(NONE), []);
  const notify = useMemo(() => ({ ok, fail }), [ok, fail]);
  return { notify, error, status, dismiss };
}

/**
 * Both regions are always in the page (a live region added together with its text is often not read),
 * and fixed in view, since the button that failed may be far down the page.
 */
export function Notices({ error, status, dismiss }: { error: Notice; status: Notice; dismiss: () => void }) {
  return (
    <div class="notices">
      <div role="alert" class="notice-slot">
        {error.text && (
          <div key={error.n} class="notice notice-error">
            <span>
              <strong>Error:</strong> {error.text}
            </span>
            <button type="button" class="small" onClick={dismiss}>
              Dismiss
            </button>
          </div>
        )}
      </div>
      <div role="status" aria-live="polite" class="notice-slot">
        {status.text && (
          <div key={status.n} class="notice notice-ok">
            {status.text}
          </div>
        )}
      </div>
    </div>
  );
}
