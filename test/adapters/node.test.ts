import { createServer } from 'node:http';
import { createWebhooks } from 'service-webhooks';
import { nodeHandler } from 'service-webhooks/node';
import { createTestEvent } from 'service-webhooks/testing';
import { expect, test } from 'vitest';
import { runAdapterCases, SECRET, signedRequest } from './adapter-cases.js';
import { listenClient } from './http-client.js';
import { listenUrl, runStreamingCases } from './streaming-cases.js';

runAdapterCases({
  name: 'node:http',
  framedOnTheWire: true,
  ownsRoute: true,
  start: async (webhooks) => listenClient(createServer(nodeHandler(webhooks))),
});

runStreamingCases({
  name: 'node:http',
  closesRefused: true,
  start: async (webhooks) => listenUrl(createServer(nodeHandler(webhooks))),
});

test('node:http: the listener settles once its answer is written, and never rejects', async () => {
  const webhooks = createWebhooks({ secret: SECRET });
  webhooks.on('user.created', () => {});
  const handle = nodeHandler(webhooks);
  const settled: string[] = [];
  const server = createServer((request, response) => {
    handle(request, response).then(
      () => settled.push(`written ${response.writableEnded}`),
      () => settled.push('rejected'),
    );
  });
  const client = await listenClient(server);
  const valid = signedRequest(JSON.stringify(createTestEvent('user.created')));
  const forged = { ...valid, headers: { ...valid.headers, 'x-service-signature': 'sha256=00' } };
  const statuses = [];
  for (const sent of [valid, valid, forged]) statuses.push((await client.send(sent)).status);
  await client.close();
  expect(statuses).toEqual([200, 200, 401]);
  expect(settled).toEqual(['written true', 'written true', 'written true']);
});
