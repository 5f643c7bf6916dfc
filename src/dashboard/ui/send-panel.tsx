import { useEffect, useRef, useState } from 'preact/hooks';
import {
  type DashboardState,
  type DevDelivery,
  SEND_CASES,
  type SendCase,
  type SendRequest,
} from '../api-types.js';
import { api } from './api.js';
import { pretty } from './format.js';
import type { Notify } from './notices.js';

/** Each case's button, and what the notice says once sent; keyed by the case, so none is left out. */
const BUTTONS: Readonly<Record<SendCase, { readonly text: string; readonly done: string }>> = {
  sent: { text: 'Send', done: 'Sent' },
  forged_signature: { text: 'Send forged signature', done: 'Sent with a forged signature' },
  stale_created: { text: 'Send with stale created', done: 'Sent with a stale created' },
  concurrent_copies: { text: 'Send two concurrent copies', done: 'Sent two concurrent copies' },
};

const CASES = SEND_CASES.map((sendCase) => ({ case: sendCase, ...BUTTONS[sendCase] }));

/** An event handed over by "Edit and resend"; `seq` makes a second click on the same event reload it. */
export interface EditRequest {
  readonly event: Record<string, unknown>;
  readonly seq: number;
}

function parseEvent(text: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `The event is not valid JSON: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'The event must be a JSON object.';
  }
  return value as Record<string, unknown>;
}

export function SendPanel(props: {
  state: DashboardState;
  edit: EditRequest | null;
  notify: Notify;
  onSent: (deliveries: readonly DevDelivery[]) => void;
  reloadState: () => Promise<DashboardState | null>;
}) {
  const { state, edit, notify, onSent, reloadState } = props;
  const [type, setType] = useState(state.event_types[0] ?? '');
  const [text, setText] = useState(() => pretty(state.samples[type] ?? {}));
  const [invalid, setInvalid] = useState('');
  const [busy, setBusy] = useState(false);
  const area = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    if (!edit) return;
    const eventType = edit.event.type;
    if (typeof eventType === 'string' && state.event_types.includes(eventType)) setType(eventType);
    setText(pretty(edit.event));
    setInvalid('');
    area.current?.scrollIntoView({ block: 'center' });
    area.current?.focus();
  }, [edit, state.event_types]);

  const choose = (next: string) => {
    setType(next);
    setText(pretty(state.samples[next] ?? {}));
    setInvalid('');
  };

  const newSample = async () => {
    const fresh = await reloadState();
    if (!fresh) return;
    setText(pretty(fresh.samples[type] ?? {}));
    setInvalid('');
    notify.ok(`Loaded a fresh ${type} sample.`);
  };

  const send = async (which: (typeof CASES)[number]) => {
    const event = parseEvent(text);
    if (typeof event === 'string') {
      setInvalid(event);
      area.current?.focus();
      return;
    }
    setInvalid('');
    setBusy(true);
    try {
      const body: SendRequest = { event, case: which.case };
      const answer = await api<{ data: DevDelivery[] }>('POST', '/_dev/api/send', body);
      onSent(answer.data);
      const eventType = typeof event.type === 'string' ? event.type : 'event';
      notify.ok(`${which.done}: ${eventType}.`);
    } catch (error) {
      notify.fail(error, which.text);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="panel send-panel" aria-labelledby="send-heading">
      <h2 id="send-heading">Send an event</h2>
      <div class="field-row">
        <label for="event-type">Event type</label>
        <select id="event-type" value={type} onChange={(e) => choose(e.currentTarget.value)}>
          {state.event_types.map((each) => (
            <option key={each} value={each}>
              {each}
            </option>
          ))}
        </select>
        <button type="button" onClick={newSample} disabled={busy}>
          New sample
        </button>
      </div>
      <label for="event-json">Event JSON</label>
      <textarea
        id="event-json"
        ref={area}
        class="code"
        rows={14}
        spellcheck={false}
        value={text}
        aria-invalid={invalid ? 'true' : 'false'}
        aria-describedby={invalid ? 'event-json-error' : undefined}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      {invalid && (
        <p id="event-json-error" role="alert" class="inline-error">
          {invalid}
        </p>
      )}
      <div class="button-row">
        {CASES.map((each) => (
          <button
            key={each.case}
            type="button"
            class={each.case === 'sent' ? 'primary' : undefined}
            disabled={busy}
            onClick={() => send(each)}
          >
            {each.text}
          </button>
        ))}
      </div>
    </section>
  );
}
