import { useCallback, useMemo, useState } from 'preact/hooks';
import { message } from './api.js';

/** How every action tells the outcome: failures in the alert region, successes in the polite status. */
export interface Notify {
  readonly ok: (text: string) => void;
  readonly fail: (error: unknown, doing?: string) => void;
}

export function useNotices(): { notify: Notify; error: string; status: string; dismiss: () => void } {
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const ok = useCallback((text: string) => {
    setError('');
    setStatus(text);
  }, []);
  const fail = useCallback((cause: unknown, doing?: string) => {
    setStatus('');
    setError(doing ? `${doing}: ${message(cause)}` : message(cause));
  }, []);
  const dismiss = useCallback(() => setError(''), []);
  const notify = useMemo(() => ({ ok, fail }), [ok, fail]);
  return { notify, error, status, dismiss };
}

export function Notices({ error, status, dismiss }: { error: string; status: string; dismiss: () => void }) {
  return (
    <div class="notices">
      <div role="alert" class={error ? 'notice notice-error' : 'notice-empty'}>
        {error && (
          <>
            <span>
              <strong>Error:</strong> {error}
            </span>
            <button type="button" class="link" onClick={dismiss}>
              Dismiss
            </button>
          </>
        )}
      </div>
      <div role="status" aria-live="polite" class={status ? 'notice notice-ok' : 'notice-empty'}>
        {status}
      </div>
    </div>
  );
}
