// The demo behind `npm start`: a real HTTP receiver on the in-memory store, and a sender in the same
// process that delivers signed events the way the service does, including the awkward cases.
// It imports the package by name, so it runs the built package exactly as users get it.
import { createServer } from 'node:http';
import { createWebhooks } from 'service-webhooks';
import { nodeHandler } from 'service-webhooks/node';
import { createTestEvent, signPayload } from 'service-webhooks/testing';

const secret = 'whsec_demo_secret';
const calls = new Map();
const count = (event) => calls.set(event.id, (calls.get(event.id) ?? 0) + 1);

const webhooks = createWebhooks({ secret });
webhooks.on('user.created', async (event) => {
  count(event);
  // Slow enough that two concurrent copies of one event really overlap.
  await new Promise((resolve) => setTimeout(resolve, 50));
});
let paymentAttempts = 0;
webhooks.on('payment.failed', (event) => {
  count(event);
  paymentAttempts++;
  if (paymentAttempts === 1) throw new Error('ledger unavailable (first attempt fails on purpose)');
});
webhooks.onError((error) =>
  console.log(`   onError: ${error.code} (${error.cause?.message ?? error.message})`),
);

const server = createServer(nodeHandler(webhooks));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/webhooks`;
console.log(`receiver listening on ${url}\n`);

async function send(label, event, { signature } = {}) {
  const body = JSON.stringify(event);
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-signature': signature ?? signPayload(body, secret),
    },
    body,
  });
  const text = await response.text();
  const code =
    response.status === 200
      ? response.headers.get('x-webhook-duplicate')
        ? 'duplicate'
        : 'handled'
      : JSON.parse(text).error.code;
  console.log(
    `${label.padEnd(44)} -> ${response.status} ${code.padEnd(18)} handler calls for ${event.id}: ${calls.get(event.id) ?? 0}`,
  );
  return response.status;
}

const first = createTestEvent('user.created', { data: { email: 'ada@example.com' } });
await send('1. valid event', first);
await send('2. the same event again (a retry)', first);

const racing = createTestEvent('user.created', { data: { email: 'grace@example.com' } });
await Promise.all([
  send('3. concurrent copy A of a new event', racing),
  send('3. concurrent copy B of the same event', racing),
]);

const forged = createTestEvent('user.created');
await send('4. forged signature', forged, {
  signature: signPayload(JSON.stringify(forged), 'not-the-secret'),
});

const flaky = createTestEvent('payment.failed');
await send('5. handler fails on the first attempt', flaky);
await send('5. the service retries after 1 minute', flaky);
await send('5. and once more (already handled)', flaky);

server.close();
