import { request as httpRequest } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import type { AdapterClient, ReceivedResponse, SentRequest } from './adapter-cases.js';

/** Send one request over real HTTP with the exact bytes given. */
export function sendHttp(url: string, sent: SentRequest): Promise<ReceivedResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: sent.method, headers: { ...sent.headers, 'content-length': String(sent.body.byteLength) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(response.headers)) {
            if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve({
            status: response.statusCode ?? 0,
            headers,
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(sent.body);
  });
}

/** Listen on a free loopback port and return a client for `path`. */
export async function listenClient(server: Server, path = '/webhooks'): Promise<AdapterClient> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    send: (sent) => sendHttp(`http://127.0.0.1:${port}${path}`, sent),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
