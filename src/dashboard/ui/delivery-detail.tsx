import { useState } from 'preact/hooks';
import type { ReceiverReport, ReportedError } from '../../dev/report.js';
import type { DashboardState, DevAttempt, DevDelivery } from '../api-types.js';
import { api, download } from './api.js';
import { useNow } from './clock.js';
import { AttemptChip, DeliveryState } from './deliveries-list.js';
import { countdown, dateTime, duration, labelText, pretty } from './format.js';
import type { Notify } from './notices.js';

function ErrorChain({ error }: { error: ReportedError }) {
  const chain: ReportedError[] = [];
  for (let each: ReportedError | undefined = error; each && chain.length < 4; each = each.cause)
    chain.push(each);
  return (
    <div class="error-box">
      <p>
        <strong>{error.name}</strong>
        {error.code && <> ({error.code})</>}: {error.message}
      </p>
      {(error.stack || chain.length > 1) && (
        <details>
          <summary>Stack and cause chain</summary>
          {chain.map((each, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the chain's depth is its identity
            <div key={index}>
              {index > 0 && (
                <p>
                  Caused by <strong>{each.name}</strong>
                  {each.code && <> ({each.code})</>}: {each.message}
                </p>
              )}
              {each.stack && <pre class="code">{each.stack}</pre>}
            </div>
          ))}
        </details>
      )}
    </div>
  );
}

function Receiver({ report }: { report: ReceiverReport | null }) {
  if (!report) {
    return <p class="muted">No report from the receiver (enable devReporter).</p>;
  }
  return (
    <>
      <dl class="facts">
        <dt>Outcome</dt>
        <dd>{report.outcome}</dd>
        <dt>Status</dt>
        <dd>{report.status}</dd>
        <dt>Code</dt>
        <dd>{report.code ?? '—'}</dd>
        <dt>Took</dt>
        <dd>{duration(report.durationMs)}</dd>
        <dt>Secret matched</dt>
        <dd>{report.secretIndex === undefined ? 'none' : `secret #${report.secretIndex + 1}`}</dd>
        <dt>Late</dt>
        <dd>{report.late ? 'yes: handlers finished after the answer' : 'no'}</dd>
        {report.message && (
          <>
            <dt>Message</dt>
            <dd>
              {report.level}: {report.message}
            </dd>
          </>
        )}
        <dt>Process</dt>
        <dd>pid {report.pid}</dd>
      </dl>
      {report.error && <ErrorChain error={report.error} />}
    </>
  );
}

function Attempt({ attempt }: { attempt: DevAttempt }) {
  return (
    <li class="attempt">
      <h4>
        Attempt {attempt.attempt} <AttemptChip attempt={attempt} />
      </h4>
      <div class="attempt-sides">
        <div>
          <h5>Sender's view</h5>
          <dl class="facts">
            <dt>Started</dt>
            <dd>{dateTime(attempt.started_at)}</dd>
            <dt>Duration</dt>
            <dd>{duration(attempt.duration_ms)}</dd>
            <dt>Status</dt>
            <dd>{attempt.status ?? 'none'}</dd>
            <dt>Code</dt>
            <dd>{attempt.code ?? '—'}</dd>
            <dt>Duplicate</dt>
            <dd>{attempt.duplicate ? 'yes' : 'no'}</dd>
            <dt>Stale</dt>
            <dd>{attempt.stale ? 'yes' : 'no'}</dd>
            <dt>Retry-After</dt>
            <dd>{attempt.retry_after ?? '—'}</dd>
            {attempt.error && (
              <>
                <dt>Error</dt>
                <dd class="bad-text">{attempt.error}</dd>
              </>
            )}
          </dl>
          {attempt.response_body && (
            <details>
              <summary>Response body</summary>
              <pre class="code">{attempt.response_body}</pre>
            </details>
          )}
        </div>
        <div>
          <h5>Receiver's view</h5>
          <Receiver report={attempt.receiver} />
        </div>
      </div>
    </li>
  );
}

function Schedule({ delivery, state }: { delivery: DevDelivery; state: DashboardState }) {
  const pending = delivery.status === 'pending' && delivery.next_attempt_at !== null;
  const now = useNow(pending);
  const delays = state.retry_delays_seconds.map((seconds) => duration(seconds * 1000 * state.time_scale));
  return (
    <>
      {!delivery.retried ? (
        <p>This delivery is a probe: sent once, never retried.</p>
      ) : (
        <p>
          The sender retries after {delays.join(', ')}
          {state.time_scale !== 1 && <> (time scale ×{state.time_scale})</>}, {delays.length + 1} attempts in
          all.
        </p>
      )}
      {pending && delivery.next_attempt !== null && delivery.next_attempt_at && (
        <p>
          <strong>
            Next: attempt {delivery.next_attempt} {countdown(Date.parse(delivery.next_attempt_at) - now)}
          </strong>{' '}
          <span class="muted">(at {dateTime(delivery.next_attempt_at)})</span>
        </p>
      )}
    </>
  );
}

export function DeliveryDetail(props: {
  delivery: DevDelivery;
  state: DashboardState;
  notify: Notify;
  onSent: (deliveries: readonly DevDelivery[]) => void;
  onEdit: (event: Record<string, unknown>) => void;
  onClose: () => void;
}) {
  const { delivery, state, notify, onSent, onEdit, onClose } = props;
  const [busy, setBusy] = useState(false);
  const total = state.retry_delays_seconds.length + 1;
  const base = `/_dev/api/deliveries/${encodeURIComponent(delivery.id)}`;

  const replay = async () => {
    setBusy(true);
    try {
      const answer = await api<{ data: DevDelivery[] }>('POST', `${base}/replay`);
      onSent(answer.data);
      notify.ok(`Replayed ${delivery.event_id}: the receiver should answer it as a duplicate.`);
    } catch (error) {
      notify.fail(error, 'Replay');
    } finally {
      setBusy(false);
    }
  };

  const exportAs = async (as: 'fixture' | 'test') => {
    try {
      const name = await download(
        `${base}/export?as=${as}`,
        `${delivery.event_id}.${as === 'test' ? 'test.ts' : 'json'}`,
      );
      notify.ok(`Downloaded ${name}.`);
    } catch (error) {
      notify.fail(error, `Export ${as}`);
    }
  };

  return (
    <section class="panel detail-panel" aria-labelledby="detail-heading" data-testid="delivery-detail">
      <div class="panel-head">
        <h2 id="detail-heading" tabIndex={-1}>
          {delivery.event_type} <span class="muted mono">{delivery.event_id}</span>
        </h2>
        <button type="button" class="small" onClick={onClose}>
          Close details
        </button>
      </div>
      <p class="summary-line">
        <span class="badge">{labelText(delivery.label)}</span>{' '}
        <DeliveryState delivery={delivery} attempts={total} />{' '}
        <span class="muted">
          created {dateTime(delivery.created_at)} · to <code>{delivery.url}</code>
        </span>
      </p>
      <div class="button-row">
        <button type="button" onClick={replay} disabled={busy}>
          Replay
        </button>
        <button type="button" onClick={() => onEdit(delivery.event)}>
          Edit and resend
        </button>
        <button type="button" onClick={() => exportAs('fixture')}>
          Export fixture
        </button>
        <button type="button" onClick={() => exportAs('test')}>
          Export test
        </button>
      </div>

      <h3>Retry schedule</h3>
      <Schedule delivery={delivery} state={state} />

      <h3>Attempts</h3>
      {delivery.attempts.length === 0 ? (
        <p class="muted">{delivery.in_flight ? 'The first attempt is on its way…' : 'No attempt yet.'}</p>
      ) : (
        <ol class="attempts">
          {delivery.attempts.map((attempt) => (
            <Attempt key={attempt.attempt} attempt={attempt} />
          ))}
        </ol>
      )}

      <h3>Event</h3>
      <pre class="code event-json">{pretty(delivery.event)}</pre>
    </section>
  );
}
