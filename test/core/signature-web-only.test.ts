/**
 * src/signature.ts where node:crypto does not exist (edge runtimes): the verifier falls back to Web
 * Crypto with the same answers, and the node:crypto-only functions say what to use instead (issue 30).
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { createVerifier, signPayload, signPayloadWeb, verifySignature } from '../../src/signature.js';

vi.mock('../../src/node-builtins.js', () => ({ nodeCrypto: undefined, isUtf8: undefined }));

const SECRET = "It's a Secret to Everybody";
const BODY = 'Hello, World!';
const VECTOR = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('without node:crypto', () => {
  test('the verifier is the Web Crypto one: asynchronous, with the same answers', async () => {
    const verifier = createVerifier(['whsec_new', SECRET]);
    const verify = verifier.check.bind(verifier);
    const answer = verify(BODY, VECTOR);
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toEqual({ ok: true, secretIndex: 1 });
    expect(await verify('Hello, World?', VECTOR)).toEqual({ ok: false, code: 'invalid_signature' });
    expect(await verify(BODY, undefined)).toEqual({ ok: false, code: 'missing_signature' });
    expect(await verify(BODY, VECTOR.toUpperCase())).toEqual({ ok: false, code: 'invalid_signature' });
    expect(await verify(new TextEncoder().encode(BODY), VECTOR)).toEqual({ ok: true, secretIndex: 1 });
  });

  test('its keys are imported once, on first use', async () => {
    const importKey = vi.spyOn(crypto.subtle, 'importKey');
    const verifier = createVerifier(['whsec_new', SECRET]);
    const verify = verifier.check.bind(verifier);
    expect(importKey).not.toHaveBeenCalled();
    await verify(BODY, VECTOR);
    await verify(BODY, VECTOR);
    expect(importKey).toHaveBeenCalledTimes(2);
  });

  test('verifySignature and signPayload name the Web Crypto function to use instead', async () => {
    expect(() => verifySignature(BODY, VECTOR, SECRET)).toThrow(
      'verifySignature needs node:crypto, which this runtime lacks; use verifySignatureWeb (Web Crypto) here.',
    );
    expect(() => signPayload(BODY, SECRET)).toThrow(
      'signPayload needs node:crypto, which this runtime lacks; use signPayloadWeb (Web Crypto) here.',
    );
    expect(await signPayloadWeb(BODY, SECRET)).toBe(VECTOR);
  });
});
