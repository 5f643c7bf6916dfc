// Sends COUNT distinct signed deliveries to http://127.0.0.1:PORT/webhooks over CONNECTIONS keep-alive
// sockets and exits when every answer is in: a fixed amount of work, so that the server's instruction
// count can be divided by it (bench/http-instructions.sh). The bodies are the shared HTTP harness's
// 2 KiB events (its lib/payload.mjs), with ids tagged TAG so that warm-up and count never collide.
import { Agent, request } from 'node:http';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const peers = resolve(process.env.PEERS ?? '../shared/bench/http/peers');
const { makeEvent, eventId, signatureHeader, SECRET, EVENT_TYPES } = await import(
  pathToFileURL(join(peers, 'lib', 'payload.mjs')).href
);
const port = Number(process.env.PORT ?? 39200);
const count = Number(process.env.COUNT ?? 5000);
const connections = Number(process.env.CONNECTIONS ?? 20);
const tag = process.env.TAG ?? 'fx';
const template = makeEvent(2048, { id: eventId(tag, 0), type: EVENT_TYPES[0] }).toString();
const agent = new Agent({ keepAlive: true, maxSockets: connections });
let sent = 0;
let answered = 0;
let refused = 0;

function next() {
  if (sent >= count) return;
  sent += 1;
  // Same length as the template whatever the type: the ids are fixed-width, the types are swapped whole.
  const body = Buffer.from(
    template
      .replace(eventId(tag, 0), eventId(tag, sent))
      .replace(EVENT_TYPES[0], EVENT_TYPES[sent % EVENT_TYPES.length]),
  );
  const headers = {
    'content-type': 'application/json',
    'x-service-signature': signatureHeader(SECRET, body),
  };
  request({ host: '127.0.0.1', port, path: '/webhooks', method: 'POST', agent, headers }, (response) => {
    if (response.statusCode !== 200) refused += 1;
    response.resume();
    response.on('end', () => {
      answered += 1;
      if (answered < count) next();
      else {
        agent.destroy();
        console.log(JSON.stringify({ answered, refused }));
        process.exitCode = refused === 0 ? 0 : 1;
      }
    });
  }).end(body);
}
for (let i = 0; i < connections; i++) next();
