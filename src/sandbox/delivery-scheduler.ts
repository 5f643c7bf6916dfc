import { randomBytes } from 'node:crypto';
import { type AnyWebhookEvent, SENDER_MAX_ATTEMPTS, SENDER_SCHEDULE } from 'service-webhooks/core';
import type { Account } from './account.js';
import { newId } from './ids.js';
import type { Delivery, WebhookRegistration } from './resources.js';
import type { SandboxState } from './sandbox-state.js';
import { type PostResult, postSigned, unanswered } from './signed-post.js';

/** How deliveries are made. */
export interface DeliverySchedulerOptions {
  /** Every account, for resuming the deliveries a saved sandbox left pending. */
  state: SandboxState;
  /**
   * Multiplies the sender's retry delays (`SENDER_SCHEDULE.retryDelaysSeconds`); 0.001 turns each delay
   * of N seconds into N milliseconds.
   */
  timeScale: number;
  /**
   * Timeout of one attempt. Not scaled, so a slow receiver is judged as the service would judge it.
   * @default SENDER_SCHEDULE.attemptTimeoutMs
   */
  attemptTimeoutMs?: number;
  /** Deliver to `http://` addresses too; the service delivers only to HTTPS. */
  allowHttp: boolean;
  /** Receives one line per attempt. */
  log: (line: string) => void;
  /**
   * Called when a delivery is created, when an attempt leaves and when it ends: the dashboard's live
   * view. Must not throw; what it does with the delivery must not change it.
   */
  onChange?: ((account: Account, delivery: Delivery) => void) | undefined;
}

/** How {@link DeliveryScheduler.deliverTo} makes a delivery, beside the service's usual way. */
export interface DeliveryHow {
  /** Recorded on the delivery (`Delivery.label`). */
  label?: string;
  /** `false`: one attempt, settled whatever it answers. @default true */
  retried?: boolean;
  /** Sign with a random secret, so the receiver should refuse it. @default false */
  forged?: boolean;
}

/**
 * Delivers events to registrations as the service does: a first attempt at once, then the retries of
 * `SENDER_SCHEDULE` for a non-2xx, a timeout or a connection error. Each account's
 * events go only to that account's registrations, and its deliveries are recorded there.
 */
export class DeliveryScheduler {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #inFlight = new Set<Promise<void>>();
  /** Deliveries with an attempt on its way now. */
  readonly #sending = new Set<string>();
  readonly #shutdown = new AbortController();
  readonly #options: DeliverySchedulerOptions;

  constructor(options: DeliverySchedulerOptions) {
    this.#options = options;
  }

  /** Deliver `event` to every registration of `account` subscribed to its type; answers the deliveries. */
  dispatch(account: Account, event: AnyWebhookEvent): Delivery[] {
    const targets = [...account.webhooks.values()].filter((registration) =>
      (registration.events as readonly string[]).includes(event.type),
    );
    // The count as the event leaves; each attempt sends the count of that moment (see `attempt`).
    const counted = { ...event, pending_webhooks: targets.length };
    return targets.map((registration) => this.deliverTo(account, registration, counted));
  }

  /** Deliver `event` to one registration, whatever it subscribes to (the `/test` endpoint). */
  deliverTo(
    account: Account,
    registration: WebhookRegistration,
    event: AnyWebhookEvent,
    how: DeliveryHow = {},
  ): Delivery {
    const now = new Date().toISOString();
    const delivery: Delivery = {
      id: newId('dlv'),
      webhook_id: registration.id,
      event_id: event.id,
      event_type: event.type,
      status: 'pending',
      attempts: [],
      next_attempt_at: now,
      created_at: now,
      event,
      ...(how.label !== undefined && { label: how.label }),
      ...(how.retried === false && { retried: false }),
      ...(how.forged === true && { forged: true }),
    };
    account.addDelivery(delivery);
    account.changed();
    this.#changed(account, delivery);
    // A timer rather than an immediate call, so the API answers before the receiver is contacted.
    this.#schedule(account, delivery, 0);
    return delivery;
  }

  /** Re-arm the deliveries a saved sandbox left pending, each at the time it was due. */
  resume(): void {
    for (const account of this.#options.state.allAccounts()) {
      for (const delivery of account.deliveries.values()) {
        if (delivery.status !== 'pending') continue;
        const due = delivery.next_attempt_at === null ? 0 : Date.parse(delivery.next_attempt_at) - Date.now();
        this.#schedule(account, delivery, Math.max(0, due));
      }
    }
  }

  /** Whether an attempt of the delivery `id` is on its way now. */
  isSending(id: string): boolean {
    return this.#sending.has(id);
  }

  /** Stop: cancel due retries and abort attempts in flight (they stay pending in a saved sandbox). */
  async close(): Promise<void> {
    this.#shutdown.abort();
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    await Promise.all(this.#inFlight);
  }

  #schedule(account: Account, delivery: Delivery, delayMs: number): void {
    if (this.#shutdown.signal.aborted) return;
    const timer = setTimeout(() => {
      this.#timers.delete(delivery.id);
      const run = this.#attempt(account, delivery).finally(() => this.#inFlight.delete(run));
      this.#inFlight.add(run);
    }, delayMs);
    this.#timers.set(delivery.id, timer);
  }

  async #attempt(account: Account, delivery: Delivery): Promise<void> {
    const number = delivery.attempts.length + 1;
    const startedAt = new Date().toISOString();
    const registration = account.webhooks.get(delivery.webhook_id);
    const refusal = this.#refusal(registration);
    let result: PostResult;
    if (refusal !== undefined || registration === undefined) {
      result = unanswered(refusal ?? '');
    } else {
      this.#sending.add(delivery.id);
      this.#changed(account, delivery);
      // pending_webhooks: deliveries of this event not yet acknowledged, this one included, so retries
      // of one event may differ in it (which is why the core deduplicates by id alone).
      const body = JSON.stringify({
        ...delivery.event,
        pending_webhooks: pendingCount(account, delivery.event_id),
      });
      const secret =
        delivery.forged === true ? `whsec_${randomBytes(24).toString('base64url')}` : registration.secret;
      result = await postSigned(registration.url, body, secret, {
        timeoutMs: this.#options.attemptTimeoutMs ?? SENDER_SCHEDULE.attemptTimeoutMs,
        signal: this.#shutdown.signal,
        userAgent: 'service-webhooks-sandbox',
      }).finally(() => this.#sending.delete(delivery.id));
    }
    // An attempt cut short by shutdown is not the receiver's fault: leave it pending for the next start.
    if (this.#shutdown.signal.aborted) return;

    delivery.attempts.push({
      attempt: number,
      started_at: startedAt,
      duration_ms: result.durationMs,
      status: result.status,
      error: result.error,
      response_body: result.body,
      duplicate: result.duplicate,
      stale: result.stale,
      code: result.code,
      retry_after: result.retryAfter,
    });
    const outcome = result.status ?? result.error;
    const where = `${delivery.event_type} ${delivery.event_id} → ${registration?.url ?? delivery.webhook_id}`;
    const prefix = `delivery ${delivery.id} attempt ${number}/${SENDER_MAX_ATTEMPTS} ${where}: ${outcome} in ${result.durationMs} ms`;
    if (result.ok) {
      delivery.status = 'succeeded';
      delivery.next_attempt_at = null;
      this.#options.log(`${prefix}; succeeded`);
    } else if (refusal !== undefined || delivery.retried === false || number >= SENDER_MAX_ATTEMPTS) {
      delivery.status = 'failed';
      delivery.next_attempt_at = null;
      this.#options.log(`${prefix}; failed, no more attempts`);
    } else {
      const delayMs = SENDER_SCHEDULE.retryDelaysSeconds[number - 1]! * 1000 * this.#options.timeScale;
      delivery.next_attempt_at = new Date(Date.now() + delayMs).toISOString();
      this.#options.log(`${prefix}; retry ${number + 1}/${SENDER_MAX_ATTEMPTS} in ${formatDelay(delayMs)}`);
      this.#schedule(account, delivery, delayMs);
    }
    account.changed();
    this.#changed(account, delivery);
  }

  #changed(account: Account, delivery: Delivery): void {
    try {
      this.#options.onChange?.(account, delivery);
    } catch (error) {
      this.#options.log(`a delivery observer threw: ${String(error)}`);
    }
  }

  #refusal(registration: WebhookRegistration | undefined): string | undefined {
    if (registration === undefined) return 'the webhook registration was deleted';
    if (!this.#options.allowHttp && new URL(registration.url).protocol !== 'https:') {
      return 'not delivered: the service delivers only to https:// addresses (start the sandbox with --allow-http)';
    }
    return undefined;
  }
}

function pendingCount(account: Account, eventId: string): number {
  let count = 0;
  for (const delivery of account.deliveries.values()) {
    if (delivery.event_id === eventId && delivery.status === 'pending') count++;
  }
  return count;
}

function formatDelay(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms)} ms`;
}
