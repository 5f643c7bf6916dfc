import { useState } from 'preact/hooks';
import type { DeadLetter, Replay } from 'service-webhooks/core';
import type { InboxView } from '../api-types.js';
import { api } from './api.js';
import { dateTime, duration, pretty, shortId, time } from './format.js';
import type { Notify } from './notices.js';

function Figure({ label, value }: { label: string; value: string | number }) {
  return (
    <div class="figure">
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

function Letter({ letter, onClose }: { letter: DeadLetter; onClose: () => void }) {
  return (
    <section class="letter" aria-labelledby="letter-heading">
      <div class="panel-head">
        <h3 id="letter-heading" tabIndex={-1}>
          Dead letter of <span class="mono">{letter.eventId}</span>
        </h3>
        <button type="button" class="small" onClick={onClose}>
          Close dead letter
        </button>
      </div>
      <dl class="facts">
        <dt>Event</dt>
        <dd>
          {letter.eventType} <span class="mono">{letter.eventId}</span>
        </dd>
        <dt>Job</dt>
        <dd class="mono">{letter.jobId}</dd>
        <dt>Attempts</dt>
        <dd>{letter.attempts}</dd>
        <dt>Received</dt>
        <dd>{dateTime(letter.receivedAt)}</dd>
        <dt>Last attempt</dt>
        <dd>{letter.lastAttemptAt === undefined ? '—' : dateTime(letter.lastAttemptAt)}</dd>
        <dt>Failed</dt>
        <dd>{letter.failedAt === undefined ? '—' : dateTime(letter.failedAt)}</dd>
        {letter.replayOf && (
          <>
            <dt>Replay of</dt>
            <dd class="mono">{letter.replayOf}</dd>
          </>
        )}
        <dt>Error</dt>
        <dd class="bad-text">{letter.lastError}</dd>
      </dl>
      {letter.stacktrace.length > 0 && (
        <details open>
          <summary>Stack traces (newest last)</summary>
          {letter.stacktrace.map((stack, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a fixed list, never reordered; stacks may repeat
            <pre key={index} class="code">
              {stack}
            </pre>
          ))}
        </details>
      )}
      <details>
        <summary>Entry</summary>
        <pre class="code">{pretty(letter.entry)}</pre>
      </details>
    </section>
  );
}

export function InboxPanel(props: {
  engine: string;
  view: InboxView | null;
  notify: Notify;
  reload: () => void;
}) {
  const { engine, view, notify, reload } = props;
  const [open, setOpen] = useState<DeadLetter | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const path = (id: string) => `/_dev/api/inbox/dead-letters/${encodeURIComponent(id)}`;

  const run = async (id: string, doing: string, action: () => Promise<string>) => {
    setBusy(id);
    try {
      notify.ok(await action());
    } catch (error) {
      notify.fail(error, doing);
    } finally {
      setBusy(null);
    }
  };

  const show = (letter: DeadLetter) =>
    run(letter.jobId, 'Showing the dead letter', async () => {
      setOpen(await api<DeadLetter>('GET', path(letter.jobId)));
      return `Showing the dead letter of ${letter.eventId}.`;
    });

  const replay = (letter: DeadLetter) =>
    run(letter.jobId, 'Replaying the dead letter', async () => {
      const answer = await api<Replay>('POST', `${path(letter.jobId)}/replay`);
      reload();
      return `Replayed the dead letter of ${letter.eventId} as job ${answer.jobId}.`;
    });

  const remove = (letter: DeadLetter) => {
    if (
      !window.confirm(
        `Remove the dead letter of ${letter.eventId} (${letter.eventType})? It cannot be replayed after.`,
      )
    ) {
      return;
    }
    void run(letter.jobId, 'Removing the dead letter', async () => {
      const answer = await api<{ removed: boolean }>('DELETE', path(letter.jobId));
      if (open?.jobId === letter.jobId) setOpen(null);
      reload();
      return answer.removed
        ? `Removed the dead letter of ${letter.eventId}.`
        : `The dead letter of ${letter.eventId} was already gone.`;
    });
  };

  const stats = view?.stats;
  return (
    <section class="panel inbox-panel" aria-labelledby="inbox-heading" data-testid="inbox">
      <h2 id="inbox-heading">
        Inbox <span class="muted">({engine})</span>
      </h2>
      {!stats ? (
        <p class="muted">Loading the inbox…</p>
      ) : (
        <>
          <dl class="figures">
            <Figure label="Waiting" value={stats.waiting} />
            <Figure label="Running" value={stats.active} />
            <Figure label="Retrying" value={stats.delayed} />
            {/* Of the retrying: held back by the worker's flow control, or waiting out a downstream's 429. */}
            <Figure label="Throttled" value={stats.throttled ?? '—'} />
            <Figure label="Rate limited" value={stats.rateLimited ?? '—'} />
            <Figure label="Dead letters" value={stats.deadLettered} />
            <Figure
              label="Oldest wait"
              value={stats.oldestWaitingMs === undefined ? '—' : duration(stats.oldestWaitingMs)}
            />
          </dl>
          <h3>Dead letters</h3>
          {view.dead_letters.length === 0 ? (
            <p class="muted">No dead letters.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">Dead letters, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Event id</th>
                    <th scope="col">Event type</th>
                    <th scope="col" class="dl-secondary">
                      Attempts
                    </th>
                    <th scope="col" class="dl-secondary">
                      Failed at
                    </th>
                    <th scope="col">Error</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {view.dead_letters.map((letter) => (
                    <tr key={letter.jobId} data-testid="dead-letter-row">
                      <td class="mono" title={letter.eventId} data-testid="dead-letter-event-id">
                        {shortId(letter.eventId)}
                      </td>
                      <td>{letter.eventType}</td>
                      <td class="dl-secondary">{letter.attempts}</td>
                      <td
                        class="dl-secondary"
                        title={letter.failedAt === undefined ? undefined : dateTime(letter.failedAt)}
                      >
                        {letter.failedAt === undefined ? '—' : time(letter.failedAt)}
                      </td>
                      <td class="error-cell">{letter.lastError}</td>
                      <td class="actions">
                        <button
                          type="button"
                          class="small"
                          disabled={busy === letter.jobId}
                          aria-label={`Show dead letter of ${letter.eventId}`}
                          onClick={() => show(letter)}
                        >
                          Show
                        </button>
                        <button
                          type="button"
                          class="small"
                          disabled={busy === letter.jobId}
                          aria-label={`Replay dead letter of ${letter.eventId}`}
                          onClick={() => replay(letter)}
                        >
                          Replay
                        </button>
                        <button
                          type="button"
                          class="small danger"
                          disabled={busy === letter.jobId}
                          aria-label={`Remove dead letter of ${letter.eventId}`}
                          onClick={() => remove(letter)}
                        >
                          Remove
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {view.more && <p class="muted">More dead letters exist than are listed here.</p>}
          {open && <Letter letter={open} onClose={() => setOpen(null)} />}
        </>
      )}
    </section>
  );
}
