import type { Delivery, Payment, Project, User, WebhookRegistration } from './resources.js';

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
  readonly #onChange: () => void;
  readonly #maxDeliveries: number;

  /**
   * @param id - `key:<sk_test_…>` or `sub:<user>`, the name the account is saved under.
   * @param onChange - called by {@link Account.changed}, so the sandbox's state can save.
   * @param maxDeliveries - how many deliveries are kept, the oldest settled dropped first.
   */
  constructor(
    readonly id: string,
    data: Partial<AccountData>,
    onChange: () => void,
    maxDeliveries = MAX_DELIVERIES,
  ) {
    this.#maxDeliveries = maxDeliveries;
    this.users = byId(data.users);
    this.projects = byId(data.projects);
    this.payments = byId(data.payments);
    this.webhooks = byId(data.webhooks);
    this.deliveries = byId(data.deliveries);
    this.#onChange = onChange;
  }

  /** Note that data changed, so it is saved (when the sandbox keeps a data file). */
  changed(): void {
    this.#onChange();
  }

  /** Record a delivery, dropping the oldest settled ones past the account's limit ({@link MAX_DELIVERIES}). */
  addDelivery(delivery: Delivery): void {
    this.deliveries.set(delivery.id, delivery);
    for (const [id, old] of this.deliveries) {
      if (this.deliveries.size <= this.#maxDeliveries) break;
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
