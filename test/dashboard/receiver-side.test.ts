import type { DeliveryRecord, WebhookLogger } from 'service-webhooks';
import { devReporter } from 'service-webhooks/dev';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevDelivery } from '../../src/dashboard/api-types.js';
import type { DevServer } from '../../src/dashboard/dev-server.js';
import {
  devApi,
  openStream,
  type StreamReader,
  settled,
  startReceiver,
  startTestDevServer,
  type TestReceiver,
} from './support.js';

const SECRET = 'whsec_receiver_side_secret';
const TOKEN = 'receiver-side-token';

// The receiver must exist before the dashboard (the dashboard is told where it is), and the reporter
// needs the dashboard's address: a relay hands the records on once both are up.
let reporter: WebhookLogger | undefined;
const relay: WebhookLogger = {
  info: (record: DeliveryRecord, message?: string) => reporter?.info(record, message),
  warn: (record: DeliveryRecord, message?: string) => reporter?.warn(record, message),
  error: (record: DeliveryRecord, message?: string) => reporter?.error(record, message),
};

let receiver: TestReceiver;
let dev: DevServer;
let stream: StreamReader;

beforeAll(async () => {
  receiver = await startReceiver(SECRET, relay);
  dev = await startTestDevServer('dev-receiver-side', {
    forward: receiver.url,
    secret: SECRET,
    token: TOKEN,
  });
  reporter = devReporter({ url: dev.reportUrl });
  stream = await openStream(dev.url, TOKEN);
});

afterAll(async () => {
  stream?.close();
  await dev?.close();
  await receiver?.close();
});

function reported(id: string, attempts: number) {
  return (event: { type: string; data: unknown }) => {
    if (event.type !== 'delivery') return false;
    const delivery = event.data as DevDelivery;
    return (
      delivery.id === id &&
      delivery.attempts.length === attempts &&
      delivery.attempts.every((attempt) => attempt.receiver !== null)
    );
  };
}

it("joins the receiver's own account of every attempt: the failure with its cause, then the success", async () => {
  const state = await devApi<{ samples: Record<string, { id: string }> }>(dev.url, TOKEN, 'GET', '/state');
  const event = state.body.samples['user.created']!;
  receiver.failOnce.add(event.id);
  const sent = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', { event });
  const id = sent.body.data[0]!.id;
  await stream.next(settled(id, 'succeeded'));
  const joined = await stream.next(reported(id, 2));
  const [failed, handled] = (joined.data as DevDelivery).attempts;
  expect(failed!.receiver).toMatchObject({
    eventId: event.id,
    outcome: 'failed',
    status: 500,
    code: 'handler_failed',
    secretIndex: 0,
    level: 'error',
    error: { name: 'HandlerFailedError', cause: { name: 'Error', message: 'boom on the first attempt' } },
  });
  expect(failed!.receiver!.error!.cause!.stack).toContain('boom on the first attempt');
  expect(handled!.receiver).toMatchObject({ outcome: 'handled', status: 200, level: 'info' });
});

it('joins a duplicate, and a forged delivery that never had an event id', async () => {
  const made = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', {
    type: 'payment.succeeded',
    case: 'concurrent_copies',
  });
  for (const copy of made.body.data) await stream.next(reported(copy.id, 1), 20_000).catch(() => undefined);
  const outcomes = made.body.data.map(
    (copy) => stream.deliveries.get(copy.id)!.attempts[0]!.receiver?.outcome,
  );
  expect(outcomes).toContain('handled');

  const forged = await devApi<{ data: DevDelivery[] }>(dev.url, TOKEN, 'POST', '/send', {
    type: 'user.deleted',
    case: 'forged_signature',
  });
  const forgedId = forged.body.data[0]!.id;
  const joined = await stream.next(reported(forgedId, 1));
  const receiverSide = (joined.data as DevDelivery).attempts[0]!.receiver;
  expect(receiverSide?.eventId).toBeUndefined();
  expect(receiverSide).toMatchObject({
    outcome: 'rejected',
    status: 401,
    code: 'invalid_signature',
  });
});
