/**
 * Which error shape answers where: the API (/v1) uses shape B with INVALID_REQUEST, the authorization
 * server (/oauth) shape A with RFC 6749's lower-case invalid_request; and requests Node's parser refuses
 * (malformed HTTP, oversized headers) still get a JSON body.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { api } from './support.js';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, rateLimit: 10_000 });
});

afterAll(async () => {
  await sandbox?.close();
});

/** Send raw bytes and collect the whole answer (the server closes the connection). */
function rawRequest(bytes: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(sandbox.port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), headers: head, body });
    });
    socket.write(bytes);
  });
}

describe('invalid_request and INVALID_REQUEST', () => {
  it('the API answers INVALID_REQUEST in shape B, with details', async () => {
    const answer = await api(sandbox.url, 'POST', '/users', { name: 'A' });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      error: {
        code: 'INVALID_REQUEST',
        message: expect.any(String),
        details: { field: 'email', reason: 'is required' },
      },
    });
  });

  it('the authorization server answers invalid_request in shape A', async () => {
    const token = await fetch(`${sandbox.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(token.status).toBe(400);
    expect(await token.json()).toEqual({
      error: { type: 'authentication_error', code: 'invalid_request', message: expect.any(String) },
    });
    const authorize = await fetch(`${sandbox.authUrl}/oauth/authorize`);
    expect(await authorize.json()).toMatchObject({ error: { code: 'invalid_request' } });
  });
});

describe('requests Node cannot parse', () => {
  it('a malformed request gets 400 with a JSON body in shape B', async () => {
    const answer = await rawRequest('NOT HTTP AT ALL\r\n\r\n');
    expect(answer.status).toBe(400);
    expect(answer.headers).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(answer.body)).toEqual({
      error: {
        code: 'INVALID_REQUEST',
        message: expect.stringMatching(/^Malformed HTTP request/),
        details: { field: 'request', reason: expect.any(String) },
      },
    });
  });

  it('oversized headers get 431 with a JSON body', async () => {
    const answer = await rawRequest(
      `GET /v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_test_a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(answer.status).toBe(431);
    expect(JSON.parse(answer.body)).toMatchObject({
      error: { code: 'INVALID_REQUEST', message: expect.stringMatching(/headers are larger/) },
    });
  });

  it('keeps serving afterwards', async () => {
    expect((await api(sandbox.url, 'GET', '/users')).status).toBe(200);
  });
});
