import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  ConfigurationError,
  createWebhooks,
  signPayload,
  signPayloadWeb,
  verifySignature,
  verifySignatureWeb,
} from 'service-webhooks';
import { describe, expect, test } from 'vitest';

const SECRET = "It's a Secret to Everybody";
const BODY = 'Hello, World!';
const VECTOR = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

describe('signatures', () => {
  test("GitHub's published vector, under our header's scheme", async () => {
    expect(signPayload(BODY, SECRET)).toBe(VECTOR);
    expect(await signPayloadWeb(BODY, SECRET)).toBe(VECTOR);
    expect(verifySignature(BODY, VECTOR, SECRET)).toEqual({ ok: true, secretIndex: 0 });
    expect(await verifySignatureWeb(BODY, VECTOR, SECRET)).toEqual({ ok: true, secretIndex: 0 });
  });

  test('bytes and the same text as a string verify alike', () => {
    const bytes = new TextEncoder().encode(BODY);
    expect(verifySignature(bytes, VECTOR, SECRET).ok).toBe(true);
    expect(verifySignature(bytes.buffer, VECTOR, SECRET).ok).toBe(true);
    expect(signPayload(bytes, SECRET)).toBe(VECTOR);
  });

  test('one changed byte of the body fails', () => {
    expect(verifySignature('Hello, World?', VECTOR, SECRET)).toEqual({
      ok: false,
      code: 'invalid_signature',
    });
  });

  test('a missing header is its own answer', async () => {
    expect(verifySignature(BODY, undefined, SECRET)).toEqual({ ok: false, code: 'missing_signature' });
    expect(await verifySignatureWeb(BODY, undefined, SECRET)).toEqual({
      ok: false,
      code: 'missing_signature',
    });
  });

  const hex = VECTOR.slice('sha256='.length);
  const malformed: Record<string, string> = {
    'uppercase hex': `sha256=${hex.toUpperCase()}`,
    'uppercase prefix': `SHA256=${hex}`,
    'truncated hex': `sha256=${hex.slice(0, 63)}`,
    'over-long hex': `sha256=${hex}0`,
    'sha1 scheme': `sha1=${hex.slice(0, 40)}`,
    'sha1 prefix on a sha256 digest': `sha1=${hex}`,
    'no prefix': hex,
    'leading space': ` ${VECTOR}`,
    'trailing space': `${VECTOR} `,
    'space after =': `sha256= ${hex.slice(1)}`,
    'two values joined by a comma': `${VECTOR},${VECTOR}`,
    'non-hex character': `sha256=${hex.slice(0, 63)}g`,
    'an 8 KiB value': `sha256=${'a'.repeat(8192)}`,
    empty: '',
    'unicode digits': `sha256=${'٠'.repeat(64)}`,
  };
  for (const [label, header] of Object.entries(malformed)) {
    test(`malformed (${label}) is refused without throwing, on both paths`, async () => {
      expect(verifySignature(BODY, header, SECRET)).toEqual({ ok: false, code: 'invalid_signature' });
      expect(await verifySignatureWeb(BODY, header, SECRET)).toEqual({
        ok: false,
        code: 'invalid_signature',
      });
    });
  }

  test('rotation: every secret is tried and the matching index reported', async () => {
    const secrets = ['new-secret', 'old-secret', SECRET];
    expect(verifySignature(BODY, VECTOR, secrets)).toEqual({ ok: true, secretIndex: 2 });
    expect(await verifySignatureWeb(BODY, VECTOR, secrets)).toEqual({ ok: true, secretIndex: 2 });
    expect(verifySignature(BODY, signPayload(BODY, 'old-secret'), secrets)).toEqual({
      ok: true,
      secretIndex: 1,
    });
    expect(verifySignature(BODY, signPayload(BODY, 'unknown'), secrets)).toEqual({
      ok: false,
      code: 'invalid_signature',
    });
  });

  test('Web Crypto and node:crypto give identical answers on random bodies, secrets and headers', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 4096 }),
        // Blank secrets are refused (next test); every other secret must verify alike on both paths.
        fc.string({ minLength: 1, maxLength: 64 }).filter((value) => value.trim() !== ''),
        fc.string({ minLength: 1, maxLength: 64 }).filter((value) => value.trim() !== ''),
        fc.constantFrom('signed', 'other-secret', 'flipped', 'random'),
        fc.string({ maxLength: 80 }),
        async (body, secret, otherSecret, kind, random) => {
          const signed = signPayload(body, secret);
          expect(await signPayloadWeb(body, secret)).toBe(signed);
          const header =
            kind === 'signed'
              ? signed
              : kind === 'other-secret'
                ? signPayload(body, otherSecret)
                : kind === 'flipped'
                  ? `${signed.slice(0, -1)}${signed.endsWith('0') ? '1' : '0'}`
                  : random;
          const secrets = [otherSecret, secret];
          expect(await verifySignatureWeb(body, header, secrets)).toEqual(
            verifySignature(body, header, secrets),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  test("the receiver's HMAC equals createHmac for keys past one block and bodies on both sides of its scratch", () => {
    // Bodies of bytes up to 16 KiB are hashed as two one-shot SHA-256 digests with prepared key blocks
    // (src/hmac-sha256.ts); longer ones and strings through createHmac. Both must be HMAC-SHA256 itself.
    const reference = (body: Uint8Array | string, secret: string) =>
      `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.integer({ min: 16 * 1024 - 2, max: 16 * 1024 + 2 }).map((length) => randomBytes(length)),
        ),
        // Up to 200 characters, some of them multibyte: keys shorter than, equal to and past 64 bytes.
        fc.string({ minLength: 1, maxLength: 200, unit: 'binary' }).filter((value) => value.trim() !== ''),
        (body, secret) => {
          const header = reference(body, secret);
          const copy = body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength);
          expect(verifySignature(body, header, secret)).toEqual({ ok: true, secretIndex: 0 });
          expect(verifySignature(copy, header, secret)).toEqual({ ok: true, secretIndex: 0 });
          expect(verifySignature(Buffer.from(body), header, ['other', secret])).toEqual({
            ok: true,
            secretIndex: 1,
          });
          expect(verifySignature(body, reference(body, `${secret}x`), secret).ok).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });

  test('a receiver verifies every delivery alike across many calls, a rotated secret and sizes past its scratch', async () => {
    const secrets = ['whsec_new', 'k'.repeat(100)];
    const webhooks = createWebhooks({ secret: secrets });
    webhooks.on('user.created', () => {});
    for (const [index, size] of [0, 300, 2048, 16 * 1024 - 200, 16 * 1024 + 500, 70_000].entries()) {
      const event = {
        id: `evt_hmac_${index}`,
        type: 'user.created',
        created: Math.floor(Date.now() / 1000),
        data: { object: 'user', pad: 'x'.repeat(size) },
        livemode: false,
      };
      const body = Buffer.from(JSON.stringify(event));
      const signedBy = secrets[index % 2]!;
      const signed = await webhooks.handle({
        body,
        headers: { 'x-service-signature': signPayload(body, signedBy) },
      });
      expect(signed.status).toBe(200);
      const forged = await webhooks.handle({
        body: Buffer.from(JSON.stringify({ ...event, id: `evt_forged_${index}` })),
        headers: { 'x-service-signature': signPayload(body, signedBy) },
      });
      expect(forged.status).toBe(401);
    }
  });

  test.each([
    ['empty', ''],
    ['white space', ' \t\n'],
  ])('an %s secret is refused alike by every verify and sign function', async (_, blank) => {
    const body = '{"id":"evt_1"}';
    const header = signPayload(body, 'whsec_real');
    expect(() => verifySignature(body, header, blank)).toThrow(ConfigurationError);
    expect(() => verifySignature(body, header, ['whsec_real', blank])).toThrow(/entry 1/);
    await expect(verifySignatureWeb(body, header, blank)).rejects.toThrow(ConfigurationError);
    await expect(verifySignatureWeb(body, header, ['whsec_real', blank])).rejects.toThrow(/entry 1/);
    expect(() => signPayload(body, blank)).toThrow(ConfigurationError);
    await expect(signPayloadWeb(body, blank)).rejects.toThrow(ConfigurationError);
    expect(() => createWebhooks({ secret: blank })).toThrow(ConfigurationError);
  });
});
