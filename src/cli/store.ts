import { open, readFile, rename, rm } from 'node:fs/promises';
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

interface StateFile {
  version: 1;
  users: User[];
  projects: Project[];
  payments: Payment[];
  webhooks: WebhookRegistration[];
  deliveries: Delivery[];
}

/** Deliveries kept, oldest dropped first, so a long-running sandbox has bounded memory. */
export const MAX_DELIVERIES = 1000;

function byId<T extends { id: string }>(items: readonly T[] | undefined): Map<string, T> {
  return new Map((items ?? []).map((item) => [item.id, item]));
}

/**
 * The sandbox's data, in memory, optionally mirrored to a JSON file. Maps keep insertion order, which
 * is the creation order lists answer in.
 */
export class SandboxStore {
  readonly users: Map<string, User>;
  readonly projects: Map<string, Project>;
  readonly payments: Map<string, Payment>;
  readonly webhooks: Map<string, WebhookRegistration>;
  readonly deliveries: Map<string, Delivery>;
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;

  private constructor(
    private readonly file: string | undefined,
    state: Partial<StateFile>,
  ) {
    this.users = byId(state.users);
    this.projects = byId(state.projects);
    this.payments = byId(state.payments);
    this.webhooks = byId(state.webhooks);
    this.deliveries = byId(state.deliveries);
  }

  /** An empty store, or the one saved in `file` (created on the first change when it does not exist). */
  static async open(file?: string): Promise<SandboxStore> {
    if (file === undefined) return new SandboxStore(undefined, {});
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new SandboxStore(file, {});
      throw error;
    }
    let state: unknown;
    try {
      state = JSON.parse(text);
    } catch {
      throw new Error(`${file} is not valid JSON; move it away or pass another --data file.`);
    }
    if (typeof state !== 'object' || state === null || (state as { version?: unknown }).version !== 1) {
      throw new Error(
        `${file} is not a sandbox data file (version 1); move it away or pass another --data file.`,
      );
    }
    return new SandboxStore(file, state as StateFile);
  }

  /** Record a delivery, dropping the oldest settled ones past {@link MAX_DELIVERIES}. */
  addDelivery(delivery: Delivery): void {
    this.deliveries.set(delivery.id, delivery);
    for (const [id, old] of this.deliveries) {
      if (this.deliveries.size <= MAX_DELIVERIES) break;
      if (old.status !== 'pending') this.deliveries.delete(id);
    }
  }

  /**
   * Note that data changed. Writes are coalesced and serialised: at most one runs at a time and one
   * more follows it with whatever changed meanwhile, so a burst of requests costs two writes.
   */
  changed(): void {
    if (this.file === undefined) return;
    if (this.dirty) return;
    this.dirty = true;
    this.writing = this.writing.then(() => this.write());
  }

  /** Wait until every change so far is on disk. */
  async flush(): Promise<void> {
    await this.writing;
  }

  private async write(): Promise<void> {
    const file = this.file;
    if (file === undefined) return;
    this.dirty = false;
    const state: StateFile = {
      version: 1,
      users: [...this.users.values()],
      projects: [...this.projects.values()],
      payments: [...this.payments.values()],
      webhooks: [...this.webhooks.values()],
      deliveries: [...this.deliveries.values()],
    };
    // Write a sibling file, flush it to disk, then rename over the old one: a crash leaves either the
    // old file or the new one, never half of one.
    const temp = `${file}.${process.pid}.tmp`;
    try {
      const handle = await open(temp, 'w');
      try {
        await handle.writeFile(JSON.stringify(state, null, 2));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, file);
    } catch (error) {
      await rm(temp, { force: true });
      process.stderr.write(`service-webhooks sandbox: could not save ${file}: ${String(error)}\n`);
    }
  }
}
