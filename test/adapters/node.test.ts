import { createServer } from 'node:http';
import { nodeHandler } from 'service-webhooks/node';
import { runAdapterCases } from './adapter-cases.js';
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
