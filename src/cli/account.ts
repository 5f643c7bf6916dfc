import type { AnyWebhookEvent, WebhookEventName } from 'service-webhooks';

/** A user, with the fields the service documents. */
export interface User {
  id: string;
  name: string;
  email: string;
  created_at: string;
}

/** A project. The service shows no fields; the sandbox chooses these. */
export interface Project {
  id: string;
  name: string;
  description: string | null;
  created_at: string;
}

/** The outcome a payment reached. */
export type PaymentStatus = 'succeeded' | 'failed' | 'refunded';

/** A payment, created only by the sandbox trigger. Amounts are in minor units (cents). */
export interface Payment {
  id: string;
  amount: number;
  currency: string;
  status: PaymentStatus;
  created_at: string;
}

/** A webhook registration. */
export interface WebhookRegistration {
  id: string;
  url: string;
  events: WebhookEventName[];
  secret: string;
  created_at: string;
}

/** One POST of a delivery to the receiver. */
export interface DeliveryAttempt {
  /** 1 for the first attempt, up to 4. */
  attempt: number;
  started_at: string;
  duration_ms: number;
  /** The receiver's HTTP status, `null` when none came (timeout, refused connection). */
  status: number | null;
  /** Why no status came, or why the attempt was not made. */
  error: string | null;
  /** The start of the receiver's answer, for debugging. */
  response_body: string;
}

/** Where a delivery stands: still being attempted, acknowledged with a 2xx, or given up. */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** Every {@link DeliveryStatus}, for validating filters. */
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'succeeded', 'failed'];

/** One event on its way to one registration. */
export interface Delivery {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  /** When the next attempt is due (ISO 8601), `null` once the delivery is settled. */
  next_attempt_at: string | null;
  created_at: string;
  /** The event as dispatched; each attempt sends `pending_webhooks` as counted at that moment. */
  event: AnyWebhookEvent;
}

/** What one account holds, as saved in the data file. */
export interface AccountData {
  users: User[];
  projects: Project[];
  payments: Payment[];
  webhooks: WebhookRegistration[];
  deliveries: Delivery[];
}

/** Deliveries kept per account, oldest settled dropped first, so a long-running sandbox has bounded memory. */
export const MAX_DELIVERIES = 1000;

function byId<T extends { id: string }>(items: readonly T[] | undefined): Map<string, T> {
  return new Map((items ?? []).map((item) => [item.id, item]));
}

/**
 * The data one caller sees, as a separate account at the service would: its own users, projects,
 * payments, webhooks and deliveries. Each API key has one, and so has each OAuth user (a token's
 * `sub`), so parallel test runs with different keys never see each other's data or events. Maps keep
 * insertion order, which is the creation order lists answer in.
 */
export class Account {
  readonly users: Map<string, User>;
  readonly projects: Map<string, Project>;
  readonly payments: Map<string, Payment>;
  readonly webhooks: Map<string, WebhookRegistration>;
  readonly deliveries: Map<string, Delivery>;

  /**
   * @param id - `key:<sk_test_…>` or `sub:<user>`, the name the account is saved under.
   * @param onChange - called by {@link Account.changed}, so the store can save.
   */
  constructor(
    readonly id: string,
    data: Partial<AccountData>,
    private readonly onChange: () => void,
  ) {
    this.users = byId(data.users);
    this.projects = byId(data.projects);
    this.payments = byId(data.payments);
    this.webhooks = byId(data.webhooks);
    this.deliveries = byId(data.deliveries);
  }

  /** Note that data changed, so it is saved (when the sandbox keeps a data file). */
  changed(): void {
    this.onChange();
  }

  /** Record a delivery, dropping the oldest settled ones past {@link MAX_DELIVERIES}. */
  addDelivery(delivery: Delivery): void {
    this.deliveries.set(delivery.id, delivery);
    for (const [id, old] of this.deliveries) {
      if (this.deliveries.size <= MAX_DELIVERIES) break;
      if (old.status !== 'pending') this.deliveries.delete(id);
    }
  }

  /** Nothing was ever created here: such accounts (a key that only read) are not saved. */
  isEmpty(): boolean {
    return (
      this.users.size +
        this.projects.size +
        this.payments.size +
        this.webhooks.size +
        this.deliveries.size ===
      0
    );
  }

  /** The account as saved in the data file. */
  toData(): AccountData {
    return {
      users: [...this.users.values()],
      projects: [...this.projects.values()],
      payments: [...this.payments.values()],
      webhooks: [...this.webhooks.values()],
      deliveries: [...this.deliveries.values()],
    };
  }
}
