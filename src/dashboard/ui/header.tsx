import { useState } from 'preact/hooks';
import type { DashboardState } from '../api-types.js';
import { api } from './api.js';
import { useNow } from './clock.js';
import { CopyButton } from './copy-button.js';
import { duration } from './format.js';
import type { Notify } from './notices.js';
import type { StreamState } from './stream.js';

const STREAM_TEXT: Readonly<Record<StreamState, string>> = {
  connecting: 'connecting…',
  live: 'live',
  disconnected: 'disconnected',
};

/** A report older than this reads as "not reporting now": the receiver may have stopped or restarted. */
const REPORT_FRESH_MS = 5 * 60_000;

function Reporting({ state, lastReportAt }: { state: DashboardState; lastReportAt: string | null }) {
  const now = useNow(lastReportAt !== null);
  const ago = lastReportAt === null ? null : now - Date.parse(lastReportAt);
  const fresh = ago !== null && ago < REPORT_FRESH_MS;
  const envLine = `SERVICE_WEBHOOKS_DEV_URL=${state.report_url}`;
  return (
    <div class="indicator-group">
      <span class={`indicator ${fresh ? 'tone-ok' : 'tone-muted'}`} data-testid="receiver-reporting">
        <span class="dot" aria-hidden="true" />
        Receiver{' '}
        {ago === null
          ? 'not reporting'
          : fresh
            ? `reporting (last report ${ago < 5000 ? 'just now' : `${duration(ago)} ago`})`
            : `last reported ${duration(ago)} ago`}
      </span>
      {!fresh && (
        <details class="hint">
          <summary>How to enable receiver reports</summary>
          <p>
            In the receiver, pass <code>logger: devReporter()</code> (from <code>service-webhooks/dev</code>)
            and start it with this variable set:
          </p>
          <p class="copy-line">
            <code>{envLine}</code> <CopyButton text={envLine} label="Copy the environment variable" />
          </p>
        </details>
      )}
    </div>
  );
}

function Secret({ hint, notify }: { hint: string; notify: Notify }) {
  const [secret, setSecret] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const show = async () => {
    setBusy(true);
    try {
      const answer = await api<{ secret: string }>('GET', '/_dev/api/secret');
      setSecret(answer.secret);
    } catch (error) {
      notify.fail(error, 'Showing the secret');
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="secret">
      <span class="muted">Secret</span>{' '}
      {secret === null ? (
        <>
          <span class="visually-hidden">ending in</span>
          <code>…{hint}</code>{' '}
          <button type="button" class="small" onClick={show} disabled={busy}>
            Show secret
          </button>
        </>
      ) : (
        <>
          <code class="secret-value">{secret}</code> <CopyButton text={secret} label="Copy the secret" />{' '}
          <button type="button" class="small" onClick={() => setSecret(null)}>
            Hide secret
          </button>
        </>
      )}
    </div>
  );
}

export function Header(props: {
  state: DashboardState | null;
  stream: StreamState;
  lastReportAt: string | null;
  unmatched: number;
  notify: Notify;
}) {
  const { state, stream, lastReportAt, unmatched, notify } = props;
  return (
    <header class="top">
      <div class="title-row">
        <h1>
          service-webhooks <span class="muted">dev</span>
        </h1>
        <span
          class={`indicator tone-${stream === 'live' ? 'ok' : stream === 'connecting' ? 'muted' : 'bad'}`}
        >
          <span class="dot" aria-hidden="true" />
          <span class="visually-hidden">Event stream: </span>
          <span data-testid="stream-state">{STREAM_TEXT[stream]}</span>
        </span>
      </div>
      {state && (
        <div class="meta-row">
          <div>
            <span class="muted">Forwarding to</span> <code data-testid="forward">{state.forward}</code>
          </div>
          <Secret hint={state.secret_hint} notify={notify} />
          <Reporting state={state} lastReportAt={lastReportAt} />
          {unmatched > 0 && (
            <span
              class="indicator tone-muted"
              data-testid="unmatched-reports"
              title="Reports of deliveries this dashboard did not make (another sender, or a receiver shared with another dashboard); the dev command logs each."
            >
              {unmatched} unmatched {unmatched === 1 ? 'report' : 'reports'}
            </span>
          )}
        </div>
      )}
    </header>
  );
}
