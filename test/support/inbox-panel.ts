/**
 * The dev dashboard's inbox panel, as every engine's test drives it (BullMQ, RabbitMQ, NATS...): the
 * sandbox sends two events whose handler refuses them, the panel shows both dead letters live, one is
 * shown and replayed, the other removed, and the figures end at zero. The engine's own test sets up
 * the door, a one-attempt worker over a {@link RefusingCrm} and the dev server with the engine's admin.
 */
import type { DeadLetter } from 'service-webhooks';
import { expect } from 'vitest';
import type { DevDelivery, InboxView } from '../../src/dashboard/api-types.js';
import { devApi, openStream, settled } from '../dashboard/support.js';
import type { RefusingCrm } from './inbox-cli.js';
import { waitUntil } from './wait-until.js';

/** Drive the panel of the dev server at `devUrl` end to end; `engine` is what the panel must name. */
export async function expectInboxPanelRoundTrip(options: {
  readonly devUrl: string;
  readonly token: string;
  readonly engine: string;
  readonly crm: RefusingCrm;
}): Promise<void> {
  const { devUrl, token, crm } = options;
  const stream = await openStream(devUrl, token);
  try {
    const empty = await devApi<InboxView>(devUrl, token, 'GET', '/inbox');
    expect(empty.body).toMatchObject({ engine: options.engine, dead_letters: [], more: false });
    expect(empty.body.stats.deadLettered).toBe(0);

    const sent: DevDelivery[] = [];
    for (const type of ['user.created', 'payment.failed']) {
      const answer = await devApi<{ data: DevDelivery[] }>(devUrl, token, 'POST', '/send', { type });
      sent.push(answer.body.data[0]!);
    }
    // The door acknowledges once the inbox holds the event: the sender sees 200 at once.
    for (const delivery of sent) await stream.next(settled(delivery.id, 'succeeded'));

    const live = await stream.next(
      (event) =>
        event.type === 'inbox' && event.data.stats.deadLettered === 2 && event.data.dead_letters.length === 2,
    );
    const letters = (live.data as InboxView).dead_letters;
    expect(letters.map((letter) => letter.eventId).sort()).toEqual(
      sent.map((delivery) => delivery.event_id).sort(),
    );
    expect(letters[0]!.lastError).toContain('crm.example refused');

    const first = letters.find((letter) => letter.eventId === sent[0]!.event_id)!;
    const firstPath = `/inbox/dead-letters/${encodeURIComponent(first.jobId)}`;
    const shown = await devApi<DeadLetter>(devUrl, token, 'GET', firstPath);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ eventId: first.eventId, eventType: 'user.created', attempts: 1 });
    expect(shown.body.stacktrace.join('\n')).toContain('crm.example refused');

    crm.failing = false;
    const replayed = await devApi(devUrl, token, 'POST', `${firstPath}/replay`);
    expect(replayed).toMatchObject({ status: 202, body: { eventId: first.eventId, replayOf: first.jobId } });
    await waitUntil('the replay to run', () => crm.handled.includes(first.eventId), 10_000);

    const second = letters.find((letter) => letter.eventId === sent[1]!.event_id)!;
    const path = `/inbox/dead-letters/${encodeURIComponent(second.jobId)}`;
    expect((await devApi(devUrl, token, 'DELETE', path)).body).toEqual({ removed: true });
    expect((await devApi(devUrl, token, 'DELETE', path)).body).toEqual({ removed: false });
    expect(await devApi(devUrl, token, 'GET', path)).toMatchObject({
      status: 404,
      body: { error: { code: 'dead_letter_not_found' } },
    });
    const missingReplay = await devApi(devUrl, token, 'POST', `${path}/replay`);
    expect(missingReplay.status).toBe(404);

    const after = await devApi<InboxView>(devUrl, token, 'GET', '/inbox');
    expect(after.body.stats.deadLettered).toBe(0);
    expect(after.body.dead_letters).toEqual([]);
  } finally {
    stream.close();
  }
}
