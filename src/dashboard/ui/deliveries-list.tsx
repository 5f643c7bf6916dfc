import { Component } from 'preact';
import type { DevAttempt, DevDelivery } from '../api-types.js';
import { useNow } from './clock.js';
import { attemptText, attemptTone, labelText, shortId, stateText, statusTone, time } from './format.js';

export function AttemptChip({ attempt }: { attempt: DevAttempt }) {
  return (
    <span
      class={`chip tone-${attemptTone(attempt)}`}
      data-testid="attempt"
      data-status-code={attempt.status === null ? '' : String(attempt.status)}
      title={`Attempt ${attempt.attempt}${attempt.code ? `: ${attempt.code}` : ''}${attempt.error ? `: ${attempt.error}` : ''}`}
    >
      {attemptText(attempt)}
    </span>
  );
}

/** The only part of a row that changes with time, so the shared clock re-renders it and not the row. */
function Countdown({ delivery, attempts }: { delivery: DevDelivery; attempts: number }) {
  const now = useNow();
  return <>{stateText(delivery, now, attempts)}</>;
}

export function DeliveryState({ delivery, attempts }: { delivery: DevDelivery; attempts: number }) {
  const ticking = delivery.status === 'pending' && !delivery.in_flight && delivery.next_attempt_at !== null;
  return (
    <span class={`state tone-${statusTone(delivery)}`}>
      {ticking ? <Countdown delivery={delivery} attempts={attempts} /> : stateText(delivery, 0, attempts)}
    </span>
  );
}

interface RowProps {
  readonly delivery: DevDelivery;
  readonly selected: boolean;
  readonly attempts: number;
  readonly onSelect: (id: string) => void;
}

/**
 * A row re-renders only when its delivery object, or whether it is selected, changes: the stream replaces
 * one delivery at a time, and a thousand rows must not all re-render for it.
 */
class Row extends Component<RowProps> {
  override shouldComponentUpdate(next: RowProps): boolean {
    const now = this.props;
    return (
      next.delivery !== now.delivery ||
      next.selected !== now.selected ||
      next.attempts !== now.attempts ||
      next.onSelect !== now.onSelect
    );
  }

  override render() {
    const { delivery, selected, attempts, onSelect } = this.props;
    return (
      <li>
        <button
          type="button"
          class={`row${selected ? ' selected' : ''}`}
          aria-current={selected ? 'true' : undefined}
          data-testid="delivery-row"
          data-delivery-id={delivery.id}
          data-status={delivery.status}
          data-label={delivery.label}
          onClick={() => onSelect(delivery.id)}
        >
          {/* The spaces between the cells keep the button's accessible name readable; a grid ignores them. */}
          <span class="col-time">{time(delivery.created_at)}</span>{' '}
          <span class="col-type">{delivery.event_type}</span>{' '}
          <span class="col-id mono" title={delivery.event_id}>
            {shortId(delivery.event_id)}
          </span>{' '}
          <span class="col-label">
            {delivery.label !== 'sent' && <span class="badge">{labelText(delivery.label)}</span>}
          </span>{' '}
          <span class="col-attempts">
            {delivery.attempts.length > 0 && <span class="visually-hidden">attempts:</span>}
            {delivery.attempts.map((attempt) => (
              <AttemptChip key={attempt.attempt} attempt={attempt} />
            ))}
          </span>{' '}
          <span class="col-state">
            <DeliveryState delivery={delivery} attempts={attempts} />
          </span>
        </button>
      </li>
    );
  }
}

export function DeliveriesList(props: {
  order: readonly string[];
  byId: ReadonlyMap<string, DevDelivery>;
  selected: string | null;
  attempts: number;
  limit: number;
  loading: boolean;
  onSelect: (id: string) => void;
  onClear: () => void;
}) {
  const { order, byId, selected, attempts, limit, loading, onSelect, onClear } = props;
  return (
    <section class="panel list-panel" aria-labelledby="deliveries-heading">
      <div class="panel-head">
        <h2 id="deliveries-heading">
          Deliveries{' '}
          <span class="count">
            ({order.length === limit ? `${order.length}, the most kept` : order.length})
          </span>
        </h2>
        <button type="button" class="danger" onClick={onClear} disabled={order.length === 0}>
          Clear history
        </button>
      </div>
      <div class="list-columns" aria-hidden="true">
        <span class="col-time">Time</span>
        <span class="col-type">Event type</span>
        <span class="col-id">Event id</span>
        <span class="col-label">Label</span>
        <span class="col-attempts">Attempts</span>
        <span class="col-state">State</span>
      </div>
      {order.length === 0 ? (
        <p class="empty">{loading ? 'Loading deliveries…' : 'No deliveries yet. Send an event below.'}</p>
      ) : (
        <ol class="deliveries" aria-label="Deliveries, newest first">
          {order.map((id) => {
            const delivery = byId.get(id);
            return delivery ? (
              <Row
                key={id}
                delivery={delivery}
                selected={id === selected}
                attempts={attempts}
                onSelect={onSelect}
              />
            ) : null;
          })}
        </ol>
      )}
    </section>
  );
}
