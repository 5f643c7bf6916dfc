/**
 * Tenants with an inbox: the door writes each tenant's event with its tenant, sealed with that
 * tenant's keys (or the shared `inboxKey`, over the tenant too); a worker's `process` finds the tenant's
 * seal keys and dedup scope from the entry, runs the handlers with `ctx.tenant`, and refuses an entry
 * moved to another tenant, stripped of its tenant, or unsealed. A tenant gone by the time the worker
 * runs fails the attempt (the engine retries, then dead-letters). The queue here is an array: the
 * engines carry `tenant` as they carry every field, which their conformance suites check.
 */
import { createHmac } from 'node:crypto';
import {
  createWebhooks,
  type InboxEntry,
  type InboxQueue,
  MemoryStore,
  type SecretOption,
  signPayload,
  UnauthenticatedInboxEntryError,
  UnknownTenantError,
  type WebhookError,
  type WebhookResponse,
} from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';

const SECRETS: Record<string, SecretOption | undefined> = {
  acme: 'whsec_acme',
  globex: ['whsec_globex_new', 'whsec_globex_old'],
};

/** A queue that keeps what the door wrote, once per key, as engines do. */
class ArrayInbox implements InboxQueue {
  readonly entries: InboxEntry[] = [];
  readonly #keys = new Set<string>();
  async enqueue(entry: InboxEntry, key: string): Promise<void> {
    if (this.#keys.has(key)) return;
    this.#keys.add(key);
    // Through JSON, as every engine stores it.
    this.entries.push(JSON.parse(JSON.stringify(entry)));
  }
}

function setup(options: { inboxKey?: string } = {}) {
  const inbox = new ArrayInbox();
  const store = new MemoryStore();
  const secrets = { ...SECRETS };
  const errors: WebhookError[] = [];
  const tenant = {
    from: { param: 'account' } as const,
    secret: (account: string) => secrets[account],
    unknownTtlSeconds: 0,
    cacheTtlSeconds: 1,
  };
  const door = createWebhooks({ store, inbox, tenant, ...options });
  const worker = createWebhooks({ store, tenant, ...options });
  const ran: string[] = [];
  worker.on('user.created', (event, ctx) => {
    ran.push(`${ctx.tenant} ${event.id} attempt ${ctx.attempt}`);
  });
  worker.onError((error) => {
    errors.push(error);
  });
  return { inbox, door, worker, ran, errors, secrets };
}

function post(
  door: { handle: (input: never) => Promise<WebhookResponse> },
  account: string,
  body: string,
  secret: string,
): Promise<WebhookResponse> {
  return door.handle({
    body,
    headers: { 'x-service-signature': signPayload(body, secret) },
    method: 'POST',
    params: { account },
  } as never);
}

describe('tenants with an inbox', () => {
  test('the door writes each tenant’s event with its tenant, once per tenant; the worker runs each once, with ctx.tenant', async () => {
    const { inbox, door, worker, ran } = setup();
    const event = createTestEvent('user.created');
    const body = JSON.stringify(event);
    expect((await post(door, 'acme', body, 'whsec_acme')).status).toBe(200);
    expect((await post(door, 'globex', body, 'whsec_globex_old')).status).toBe(200);
    // The sender's retry to one tenant is a duplicate for that tenant: nothing more is queued.
    const again = await post(door, 'acme', body, 'whsec_acme');
    expect(again.headers['x-webhook-duplicate']).toBe('true');
    expect(inbox.entries.map((entry) => [entry.tenant, entry.event.id, entry.secretIndex])).toEqual([
      ['acme', event.id, 0],
      ['globex', event.id, 1],
    ]);
    for (const entry of inbox.entries) expect(await worker.process(entry)).toBe('handled');
    for (const entry of inbox.entries) expect(await worker.process(entry)).toBe('duplicate');
    expect(ran).toEqual([`acme ${event.id} attempt 1`, `globex ${event.id} attempt 1`]);
  });

  test('an entry moved to another tenant, stripped of its tenant, or unsealed runs no handler: unauthenticated, reported', async () => {
    const { inbox, door, worker, ran, errors } = setup();
    const body = JSON.stringify(createTestEvent('user.created'));
    await post(door, 'acme', body, 'whsec_acme');
    const [entry] = inbox.entries;
    const { tenant: _tenant, ...stripped } = entry!;
    const { seal: _seal, ...unsealed } = entry!;
    for (const forged of [{ ...entry!, tenant: 'globex' }, stripped, unsealed]) {
      await expect(worker.process(forged)).rejects.toBeInstanceOf(UnauthenticatedInboxEntryError);
      // acceptUnsealed (an upgrade's way through) never vouches for the tenant an entry names.
      await expect(worker.process(forged, { acceptUnsealed: true })).rejects.toBeInstanceOf(
        UnauthenticatedInboxEntryError,
      );
    }
    expect(ran).toEqual([]);
    expect(errors.map((error) => error.code)).toEqual(Array(6).fill('unauthenticated_inbox_entry'));
    expect(errors[2]!.message).toMatch(/names no tenant/);
    // The entry as the door wrote it still runs.
    expect(await worker.process(entry!)).toBe('handled');
  });

  test('with one inboxKey for every tenant, the tenant is sealed too: moving an entry is still refused', async () => {
    const { inbox, door, worker, ran } = setup({ inboxKey: 'inbox_key_shared' });
    const body = JSON.stringify(createTestEvent('user.created'));
    await post(door, 'acme', body, 'whsec_acme');
    const [entry] = inbox.entries;
    await expect(worker.process({ ...entry!, tenant: 'globex' })).rejects.toBeInstanceOf(
      UnauthenticatedInboxEntryError,
    );
    expect(await worker.process(entry!)).toBe('handled');
    expect(ran).toHaveLength(1);
  });

  test('a receiver of one registration refuses a tenant’s entry, even under the same inboxKey', async () => {
    const { inbox, door } = setup({ inboxKey: 'inbox_key_shared' });
    await post(door, 'acme', JSON.stringify(createTestEvent('user.created')), 'whsec_acme');
    const single = createWebhooks({
      secret: 'whsec_acme',
      store: new MemoryStore(),
      inboxKey: 'inbox_key_shared',
    });
    const errors: WebhookError[] = [];
    single.onError((error) => {
      errors.push(error);
    });
    let runs = 0;
    single.on('user.created', () => {
      runs++;
    });
    await expect(single.process(inbox.entries[0]!)).rejects.toThrow(/written for a tenant/);
    expect(errors.map((error) => error.code)).toEqual(['unauthenticated_inbox_entry']);
    expect(runs).toBe(0);
  });

  test('a retry’s attempt is sealed with its tenant’s keys; one sealed for another tenant is refused', async () => {
    const { inbox, door, worker, ran } = setup();
    const body = JSON.stringify(createTestEvent('user.created'));
    await post(door, 'acme', body, 'whsec_acme');
    await post(door, 'globex', body, 'whsec_globex_new');
    const [acme, globex] = inbox.entries;
    const acmeSecond = await worker.sealAttempt(acme!, 2);
    const globexSecond = await worker.sealAttempt(globex!, 2);
    // Globex's attempt seal on acme's entry: a forgery across tenants.
    await expect(
      worker.process({ ...acmeSecond, attemptSeal: globexSecond.attemptSeal! }),
    ).rejects.toBeInstanceOf(UnauthenticatedInboxEntryError);
    expect(await worker.process(acmeSecond)).toBe('handled');
    expect(ran).toEqual([`acme ${acme!.event.id} attempt 2`]);
  });

  test('a tenant gone by the time the worker runs fails the attempt (retried, not poison), reported; back, it runs', async () => {
    const { inbox, door, worker, ran, errors, secrets } = setup();
    const body = JSON.stringify(createTestEvent('user.created'));
    await post(door, 'acme', body, 'whsec_acme');
    const [entry] = inbox.entries;
    secrets.acme = undefined;
    // The directory keeps the tenant's secrets for cacheTtlSeconds (1 s here), as the door's do.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const failed = await worker.process(entry!).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(UnknownTenantError);
    expect(failed).not.toBeInstanceOf(UnauthenticatedInboxEntryError);
    expect(errors.map((error) => error.code)).toEqual(['unknown_tenant']);
    expect(ran).toEqual([]);
    secrets.acme = 'whsec_acme';
    expect(await worker.process(entry!)).toBe('handled');
    expect(ran).toHaveLength(1);
  });

  test('an entry of a receiver of one registration keeps the seal it had before tenants', async () => {
    const inbox = new ArrayInbox();
    const door = createWebhooks({ secret: 'whsec_single', store: new MemoryStore(), inbox });
    const event = createTestEvent('user.created');
    await door.handle({
      body: JSON.stringify(event),
      headers: { 'x-service-signature': signPayload(JSON.stringify(event), 'whsec_single') },
    });
    const [entry] = inbox.entries;
    expect(entry!.tenant).toBeUndefined();
    // The seal as it was computed before tenants, written out here: the label, the event with its keys
    // sorted, receivedAt, secretIndex and the (absent) trace context, nothing more.
    const sorted = (value: unknown): unknown =>
      typeof value !== 'object' || value === null || Array.isArray(value)
        ? value
        : Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, sorted((value as Record<string, unknown>)[key])]),
          );
    const text = JSON.stringify([
      'service-webhooks inbox entry v1',
      sorted(entry!.event),
      entry!.receivedAt,
      0,
      null,
    ]);
    const key = createHmac('sha256', 'whsec_single').update('service-webhooks inbox key v1').digest();
    expect(entry!.seal).toBe(`v1.${createHmac('sha256', key).update(text).digest('hex')}`);
  });
});
