import { createServer } from 'node:http';
import { nodeHandler } from 'service-webhooks/node';
import { runAdapterCases } from './adapter-cases.js';
import { listenClient } from './http-client.js';

runAdapterCases({
  name: 'node:http',
  framedOnTheWire: true,
  ownsRoute: true,
  start: async (webhooks) => listenClient(createServer(nodeHandler(webhooks))),
});
