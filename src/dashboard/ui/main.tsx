import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { DashboardEvent, DashboardState, DevDelivery, InboxView } from '../api-types.js';
import { api } from './api.js';
import { DeliveriesList } from './deliveries-list.js';
import { type Deliveries, EMPTY, fromList, upsert } from './deliveries-store.js';
import { DeliveryDetail } from './delivery-detail.js';
import { Header } from './header.js';
import { InboxPanel } from './inbox-panel.js';
import { Notices, useNotices } from './notices.js';
import { type EditRequest, SendPanel } from './send-panel.js';
import { openStream, type StreamState } from './stream.js';

/** Until the state arrives; the contract's own default. */
const DEFAULT_LIMIT = 1000;
const HASH_PREFIX = '#delivery=';

function selectedFromHash(): string | null {
  const { hash } = window.location;
  return hash.startsWith(HASH_PREFIX) ? decodeURIComponent(hash.slice(HASH_PREFIX.length)) : null;
}

function App() {
  const { notify, error, status, dismiss } = useNotices();
  const [state, setState] = useState<DashboardState | null>(null);
  const [stateFailed, setStateFailed] = useState('');
  const [deliveries, setDeliveries] = useState<Deliveries>(EMPTY);
  const [loading, setLoading] = useState(true);
  const [stream, setStream] = useState<StreamState>('connecting');
  const [lastReportAt, setLastReportAt] = useState<string | null>(null);
  const [unmatched, setUnmatched] = useState(0);
  const [inbox, setInbox] = useState<InboxView | null>(null);
  const [selected, setSelected] = useState<string | null>(selectedFromHash);
  const [edit, setEdit] = useState<EditRequest | null>(null);

  const limit = useRef(DEFAULT_LIMIT);
  const inboxEngine = useRef<string | null>(null);
  /** Stream events that arrive while the list is being fetched, re-applied on top of the fetched list. */
  const pending = useRef<DevDelivery[] | null>(null);

  const apply = useCallback((list: readonly DevDelivery[]) => {
    if (pending.current) pending.current.push(...list);
    setDeliveries((current) => list.reduce((acc, each) => upsert(acc, each, limit.current), current));
  }, []);

  const loadState = useCallback(async (): Promise<DashboardState | null> => {
    try {
      const next = await api<DashboardState>('GET', '/_dev/api/state');
      limit.current = next.history_limit;
      inboxEngine.current = next.inbox;
      setState(next);
      setStateFailed('');
      setLastReportAt((known) =>
        known && next.last_report_at && known > next.last_report_at ? known : next.last_report_at,
      );
      setUnmatched((known) => Math.max(known, next.unmatched_reports));
      return next;
    } catch (cause) {
      notify.fail(cause, 'Loading the dashboard state');
      setStateFailed(cause instanceof Error ? cause.message : String(cause));
      return null;
    }
  }, [notify]);

  const loadInbox = useCallback(async () => {
    if (!inboxEngine.current) return;
    try {
      setInbox(await api<InboxView>('GET', '/_dev/api/inbox'));
    } catch (cause) {
      notify.fail(cause, 'Loading the inbox');
    }
  }, [notify]);

  /** The full list: on the first open, and on a reconnect the server could not resume. */
  const loadDeliveries = useCallback(async () => {
    pending.current = [];
    try {
      const answer = await api<{ data: DevDelivery[] }>('GET', '/_dev/api/deliveries');
      const missed = pending.current;
      setDeliveries(
        missed.reduce((acc, each) => upsert(acc, each, limit.current), fromList(answer.data, limit.current)),
      );
    } catch (cause) {
      notify.fail(cause, 'Loading the deliveries');
    } finally {
      pending.current = null;
      setLoading(false);
    }
  }, [notify]);

  useEffect(() => {
    let started = false;
    const ready = loadState();
    const onEvent = (event: DashboardEvent) => {
      switch (event.type) {
        case 'delivery':
          apply([event.data]);
          break;
        case 'cleared':
          if (pending.current) pending.current.length = 0;
          setDeliveries(EMPTY);
          break;
        case 'inbox':
          setInbox(event.data);
          break;
        case 'report':
          setLastReportAt(event.data.at);
          break;
        case 'unmatched':
          setUnmatched(event.data.count);
          break;
        case 'sync':
          // After each (re)open. Resumed: the server sent what the page missed, nothing to reload. Not
          // resumed (the first open, a restarted server, an outage too long): the whole list, and after
          // a restart the state too (secret, samples).
          void ready.then(() => {
            const first = !started;
            started = true;
            void loadInbox();
            if (event.data.resumed) return;
            if (!first) void loadState();
            void loadDeliveries();
          });
          break;
      }
    };
    return openStream({ onEvent, onState: setStream });
  }, [apply, loadState, loadDeliveries, loadInbox]);

  useEffect(() => {
    const onHash = () => setSelected(selectedFromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const select = useCallback((id: string) => {
    window.location.hash = `${HASH_PREFIX.slice(1)}${encodeURIComponent(id)}`;
    setSelected(id);
    // Keyboard users land on the details rather than tabbing past up to a thousand rows to reach them.
    requestAnimationFrame(() => document.getElementById('detail-heading')?.focus());
  }, []);

  const closeDetail = useCallback(() => {
    const id = selected;
    history.replaceState(null, '', window.location.pathname + window.location.search);
    setSelected(null);
    if (id) {
      requestAnimationFrame(() =>
        document.querySelector<HTMLElement>(`[data-delivery-id="${CSS.escape(id)}"]`)?.focus(),
      );
    }
  }, [selected]);

  const clear = useCallback(async () => {
    if (!window.confirm('Clear the whole delivery history? This cannot be undone.')) return;
    try {
      const answer = await api<{ deleted: number }>('DELETE', '/_dev/api/deliveries');
      setDeliveries(EMPTY);
      notify.ok(`Cleared ${answer.deleted} ${answer.deleted === 1 ? 'delivery' : 'deliveries'}.`);
    } catch (cause) {
      notify.fail(cause, 'Clearing the history');
    }
  }, [notify]);

  const editEvent = useCallback((event: Record<string, unknown>) => {
    setEdit((previous) => ({ event, seq: (previous?.seq ?? 0) + 1 }));
  }, []);

  const reloadInbox = useCallback(() => void loadInbox(), [loadInbox]);

  const current = selected ? (deliveries.byId.get(selected) ?? null) : null;
  const attempts = state ? state.retry_delays_seconds.length + 1 : 4;

  return (
    <>
      <a class="skip-link" href="#deliveries-heading">
        Skip to deliveries
      </a>
      <Header
        state={state}
        stream={stream}
        lastReportAt={lastReportAt}
        unmatched={unmatched}
        notify={notify}
      />
      <main>
        <Notices error={error} status={status} dismiss={dismiss} />
        {!state && (
          <p class="empty">
            {stateFailed ? (
              <>
                Cannot load the dashboard.{' '}
                <button type="button" onClick={() => void loadState()}>
                  Try again
                </button>
              </>
            ) : (
              'Loading…'
            )}
          </p>
        )}
        <div class={`work-grid${current && state ? ' with-detail' : ''}`}>
          <DeliveriesList
            order={deliveries.order}
            byId={deliveries.byId}
            selected={selected}
            attempts={attempts}
            limit={state?.history_limit ?? DEFAULT_LIMIT}
            loading={loading}
            onSelect={select}
            onClear={clear}
          />
          {current && state && (
            <DeliveryDetail
              delivery={current}
              state={state}
              notify={notify}
              onSent={apply}
              onEdit={editEvent}
              onClose={closeDetail}
            />
          )}
          {selected && !current && !loading && (
            <section class="panel detail-panel" aria-labelledby="detail-heading">
              <h2 id="detail-heading" tabIndex={-1}>
                Delivery not found
              </h2>
              <p>
                <code>{selected}</code> is not in the history (cleared, or older than the last{' '}
                {state?.history_limit ?? DEFAULT_LIMIT}).
              </p>
              <button type="button" onClick={closeDetail}>
                Close details
              </button>
            </section>
          )}
        </div>
        {state && (
          <div class={`top-grid${state.inbox ? ' with-inbox' : ''}`}>
            <SendPanel state={state} edit={edit} notify={notify} onSent={apply} reloadState={loadState} />
            {state.inbox && (
              <InboxPanel engine={state.inbox} view={inbox} notify={notify} reload={reloadInbox} />
            )}
          </div>
        )}
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
