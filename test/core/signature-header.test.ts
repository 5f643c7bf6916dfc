/**
 * The signature header's parser and reader (src/signature.ts): one digest has one spelling (64
 * lowercase hex digits after `sha256=`, nothing else decodes), a repeated header is refused, a header
 * is read the same whichever way the framework hands headers over (issue 30).
 */
import { createWebhooks, signPayload, verifySignature, verifySignatureWeb } from 'service-webhooks';
import { createTestEvent } from 'service-webhooks/testing';
import { describe, expect, test } from 'vitest';
import { createVerifier, readHeader, SIGNATURE_HEADER } from '../../src/signature.js';

const SECRET = 'whsec_header';
const BODY = '{"id":"evt_1"}';
const SIGNED = signPayload(BODY, SECRET);
const HEX = SIGNED.slice('sha256='.length);
const LOWERCASE_HEX = '0123456789abcdef';

/** The signature with the character at `at` (an index into the 64 hex digits) replaced. */
const withDigit = (at: number, char: string) => `sha256=${HEX.slice(0, at)}${char}${HEX.slice(at + 1)}`;

describe('one digest, one spelling', () => {
  test('every character but the 16 lowercase hex digits is refused, in every digit position', () => {
    // Were any other character decoded (as 0, 1 or any digit), it would match the true digit at some
    // position of the signature, and that spelling would verify.
    const verifier = createVerifier([SECRET]);
    const verify = verifier.check.bind(verifier);
    const others = [...Array.from({ length: 0x180 }, (_, code) => code), 0x660, 0xff10, 0xff41, 0xffff]
      .map((code) => String.fromCharCode(code))
      .filter((char) => !LOWERCASE_HEX.includes(char));
    const accepted: string[] = [];
    for (const char of others) {
      for (let at = 0; at < 64; at++) {
        const answer = verify(BODY, withDigit(at, char)) as { ok: boolean };
        if (answer.ok) accepted.push(`U+${char.charCodeAt(0).toString(16)} at ${at}`);
      }
    }
    expect(accepted).toEqual([]);
    // The signature has each digit somewhere, so each digit's misreading had its chance above.
    expect(new Set(HEX).size).toBe(16);
  });

  test('U+0080, the first code past ASCII, is no digit (both paths)', async () => {
    const header = withDigit(10, '\u0080');
    expect(verifySignature(BODY, header, SECRET)).toEqual({ ok: false, code: 'invalid_signature' });
    expect(await verifySignatureWeb(BODY, header, SECRET)).toEqual({ ok: false, code: 'invalid_signature' });
  });

  test('each hex digit decodes to its own value: a changed digit anywhere fails', () => {
    for (let at = 0; at < 64; at++) {
      const digit = HEX[at]!;
      const other = LOWERCASE_HEX[(LOWERCASE_HEX.indexOf(digit) + 1) % 16]!;
      expect(verifySignature(BODY, withDigit(at, other), SECRET).ok).toBe(false);
    }
    expect(verifySignature(BODY, SIGNED, SECRET).ok).toBe(true);
  });

  test('a digest of zeros and of all ones decodes (no digit value is special)', () => {
    // Neither matches the body; both must reach the comparison and be refused as invalid, not crash.
    expect(verifySignature(BODY, `sha256=${'0'.repeat(64)}`, SECRET).ok).toBe(false);
    expect(verifySignature(BODY, `sha256=${'f'.repeat(64)}`, SECRET).ok).toBe(false);
  });
});

describe('signPayload', () => {
  test('signs a string, its bytes and an ArrayBuffer of them alike', () => {
    const bytes = new TextEncoder().encode(BODY);
    expect(signPayload(bytes, SECRET)).toBe(SIGNED);
    expect(signPayload(bytes.buffer, SECRET)).toBe(SIGNED);
  });
});

describe('the verifier', () => {
  test('the first secret that matches is the one reported, though every secret is tried', () => {
    expect(verifySignature(BODY, SIGNED, [SECRET, SECRET])).toEqual({ ok: true, secretIndex: 0 });
    expect(verifySignature(BODY, SIGNED, ['whsec_other', SECRET, SECRET])).toEqual({
      ok: true,
      secretIndex: 1,
    });
  });

  test('a match past the sixteenth secret is reported with its index', () => {
    const secrets = Array.from({ length: 17 }, (_, i) => `whsec_${i}`);
    const header = signPayload(BODY, 'whsec_16');
    expect(verifySignature(BODY, header, secrets)).toEqual({ ok: true, secretIndex: 16 });
    expect(verifySignature(BODY, signPayload(BODY, 'whsec_15'), secrets)).toEqual({
      ok: true,
      secretIndex: 15,
    });
  });

  test('answers are shared frozen objects: a match costs no allocation', () => {
    const verifier = createVerifier([SECRET, 'whsec_old']);
    const verify = verifier.check.bind(verifier);
    const first = verify(BODY, SIGNED);
    expect(verify(BODY, SIGNED)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(verify(BODY, signPayload(BODY, 'whsec_old'))).toBe(verify(BODY, signPayload(BODY, 'whsec_old')));
    expect(verify(BODY, undefined)).toBe(verify(BODY, undefined));
    expect(verify(BODY, 'sha256=nope')).toBe(verify(BODY, 'sha256=nope'));
  });

  test('the node:crypto verifier reuses its digest buffer without mixing up calls', () => {
    const verifier = createVerifier([SECRET]);
    const verify = verifier.check.bind(verifier);
    const other = signPayload('{"id":"evt_2"}', SECRET);
    expect(verify(BODY, other)).toEqual({ ok: false, code: 'invalid_signature' });
    expect(verify(BODY, SIGNED)).toEqual({ ok: true, secretIndex: 0 });
    expect(verify('{"id":"evt_2"}', other)).toEqual({ ok: true, secretIndex: 0 });
  });
});

describe('readHeader', () => {
  test('absent or broken header collections count as no header', () => {
    expect(readHeader(undefined, SIGNATURE_HEADER)).toBeUndefined();
    expect(readHeader(null, SIGNATURE_HEADER)).toBeUndefined();
    expect(readHeader('x-service-signature: sha256=0' as never, SIGNATURE_HEADER)).toBeUndefined();
  });

  test('a Headers object is asked by name; its null is no header', () => {
    expect(readHeader(new Headers({ 'X-Service-Signature': SIGNED }), SIGNATURE_HEADER)).toBe(SIGNED);
    expect(readHeader(new Headers(), SIGNATURE_HEADER)).toBeUndefined();
  });

  test('a record is read by its lowercase name, or by any spelling of it', () => {
    expect(readHeader({ 'x-service-signature': SIGNED }, SIGNATURE_HEADER)).toBe(SIGNED);
    expect(readHeader({ 'X-Service-Signature': SIGNED }, SIGNATURE_HEADER)).toBe(SIGNED);
    expect(readHeader({ 'X-SERVICE-SIGNATURE': SIGNED }, SIGNATURE_HEADER)).toBe(SIGNED);
  });

  test('the exact name wins over another spelling, and of other spellings the first', () => {
    expect(
      readHeader({ 'X-Service-Signature': 'first', 'x-service-signature': SIGNED }, SIGNATURE_HEADER),
    ).toBe(SIGNED);
    expect(
      readHeader({ 'X-Service-Signature': 'first', 'X-SERVICE-SIGNATURE': 'second' }, SIGNATURE_HEADER),
    ).toBe('first');
  });

  test('other headers, longer names and inherited properties are not it', () => {
    expect(
      readHeader({ 'x-service-signature-v2': SIGNED, 'x-service-signaturf': SIGNED }, SIGNATURE_HEADER),
    ).toBeUndefined();
    const inherited = Object.create({ 'x-service-signature': SIGNED }) as Record<string, string>;
    expect(readHeader(inherited, SIGNATURE_HEADER)).toBeUndefined();
  });

  test('a value that is not a string (Lambda nulls, numbers) is no header', () => {
    expect(readHeader({ 'x-service-signature': null } as never, SIGNATURE_HEADER)).toBeUndefined();
    expect(readHeader({ 'x-service-signature': 42 } as never, SIGNATURE_HEADER)).toBeUndefined();
    expect(readHeader({ 'x-service-signature': [] } as never, SIGNATURE_HEADER)).toBeUndefined();
    expect(readHeader({ 'x-service-signature': [null, 3] } as never, SIGNATURE_HEADER)).toBeUndefined();
  });

  test('a list of one value is that value; a repeated header is its values joined, as Headers does', () => {
    expect(readHeader({ 'x-service-signature': [SIGNED] }, SIGNATURE_HEADER)).toBe(SIGNED);
    expect(readHeader({ 'x-service-signature': [SIGNED, 'sha256=b'] }, SIGNATURE_HEADER)).toBe(
      `${SIGNED},sha256=b`,
    );
    expect(readHeader({ 'x-service-signature': [SIGNED, null] } as never, SIGNATURE_HEADER)).toBe(SIGNED);
  });
});

describe('a repeated signature header is refused', () => {
  test.each([
    ['the same signature twice', [SIGNED, SIGNED]],
    ['a valid signature and another', [SIGNED, `sha256=${'0'.repeat(64)}`]],
    ['another and a valid signature', [`sha256=${'0'.repeat(64)}`, SIGNED]],
  ])('%s: 401 invalid_signature, no handler runs', async (_, values) => {
    const event = createTestEvent('user.created');
    const body = JSON.stringify(event);
    const signature = signPayload(body, SECRET);
    const webhooks = createWebhooks({ secret: SECRET }).onError(() => {});
    let runs = 0;
    webhooks.on('user.created', () => {
      runs++;
    });
    const headers = { 'x-service-signature': values.map((value) => (value === SIGNED ? signature : value)) };
    const response = await webhooks.handle({ body, headers });
    expect(response.status).toBe(401);
    expect(JSON.parse(response.body)).toMatchObject({ error: { code: 'invalid_signature' } });
    expect(runs).toBe(0);
    // The same delivery with the header once is accepted.
    expect((await webhooks.handle({ body, headers: { 'x-service-signature': signature } })).status).toBe(200);
    expect(runs).toBe(1);
  });
});
