/**
 * The envelope check (src/envelope.ts): each field the receiver relies on, at its boundaries, with the
 * message that names it (issue 30).
 */
import { describe, expect, test } from 'vitest';
import { checkEnvelope, MAX_EVENT_ID_LENGTH, parseEnvelope } from '../../src/envelope.js';
import { InvalidRequestError } from '../../src/errors.js';

const VALID = Object.freeze({
  id: 'evt_1',
  type: 'user.created',
  created: 1_700_000_000,
  data: { object: 'user' },
  livemode: false,
});

function refusal(value: unknown): string {
  try {
    checkEnvelope(value);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).code).toBe('invalid_request');
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('parseEnvelope', () => {
  test('parses a valid envelope and answers it as parsed', () => {
    expect(parseEnvelope(JSON.stringify(VALID))).toEqual(VALID);
  });

  test('a body that is not JSON is refused as such', () => {
    expect(() => parseEnvelope('{"id":')).toThrow(InvalidRequestError);
    expect(() => parseEnvelope('{"id":')).toThrow('The body is not valid JSON.');
  });

  test('a key named __proto__ stays an own property of the data', () => {
    const event = parseEnvelope(
      `{"id":"evt_1","type":"t","created":1,"livemode":true,"data":{"__proto__":{"polluted":true}}}`,
    );
    expect(Object.hasOwn(event.data, '__proto__')).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

describe('checkEnvelope', () => {
  test('answers the very value it was given', () => {
    const value = { ...VALID, extra: 1 };
    expect(checkEnvelope(value)).toBe(value);
  });

  test.each([
    ['null', null],
    ['an array', [VALID]],
    ['a string', 'evt_1'],
    ['a number', 1],
  ])('a body that is %s is not an object', (_, value) => {
    expect(refusal(value)).toBe('The body must be a JSON object.');
  });

  const ID_MESSAGE = `\`id\` must be a non-empty string of at most ${MAX_EVENT_ID_LENGTH} characters.`;
  test.each([
    ['missing', undefined],
    ['a number', 42],
    ['empty', ''],
    ['one character too long', 'e'.repeat(MAX_EVENT_ID_LENGTH + 1)],
  ])('an id %s is refused', (_, id) => {
    expect(refusal({ ...VALID, id })).toBe(ID_MESSAGE);
  });

  test('ids of one character and of the longest length are accepted', () => {
    expect(MAX_EVENT_ID_LENGTH).toBe(255);
    expect(checkEnvelope({ ...VALID, id: 'e' }).id).toBe('e');
    expect(checkEnvelope({ ...VALID, id: 'e'.repeat(255) }).id).toHaveLength(255);
  });

  test.each([
    ['missing', undefined],
    ['a number', 7],
    ['empty', ''],
  ])('a type %s is refused', (_, type) => {
    expect(refusal({ ...VALID, type })).toBe('`type` must be a non-empty string.');
  });

  test('a type of one character is accepted', () => {
    expect(checkEnvelope({ ...VALID, type: 't' }).type).toBe('t');
  });

  test.each([
    ['missing', undefined],
    ['a fraction', 1.5],
    ['a numeric string', '1700000000'],
    ['beyond safe integers', 2 ** 53],
  ])('a created %s is refused', (_, created) => {
    expect(refusal({ ...VALID, created })).toBe('`created` must be an integer (Unix seconds).');
  });

  test.each([
    ['missing', undefined],
    ['null', null],
    ['an array', []],
    ['a string', 'user'],
  ])('data %s is refused', (_, data) => {
    expect(refusal({ ...VALID, data })).toBe('`data` must be an object.');
  });

  test.each([
    ['missing', undefined],
    ['a string', 'false'],
    ['a number', 0],
  ])('a livemode %s is refused', (_, livemode) => {
    expect(refusal({ ...VALID, livemode })).toBe('`livemode` must be a boolean.');
  });

  test('livemode true and false are both accepted', () => {
    expect(checkEnvelope({ ...VALID, livemode: true }).livemode).toBe(true);
    expect(checkEnvelope({ ...VALID, livemode: false }).livemode).toBe(false);
  });

  test.each([
    ['null', null],
    ['a fraction', 2.5],
    ['a string', '3'],
  ])('pending_webhooks %s is refused', (_, pending_webhooks) => {
    expect(refusal({ ...VALID, pending_webhooks })).toBe(
      '`pending_webhooks` must be an integer when present.',
    );
  });

  test('pending_webhooks absent or an integer is accepted', () => {
    expect(checkEnvelope({ ...VALID })).toEqual(VALID);
    expect(checkEnvelope({ ...VALID, pending_webhooks: 3 })).toMatchObject({ pending_webhooks: 3 });
  });

  test.each([
    ['a string', 'req_1'],
    ['an array', [{ id: 'req_1' }]],
    ['a number', 1],
  ])('a request %s is refused', (_, request) => {
    expect(refusal({ ...VALID, request })).toBe('`request` must be an object when present.');
  });

  test('a request absent, null or an object is accepted', () => {
    expect(checkEnvelope({ ...VALID, request: null })).toMatchObject({ request: null });
    expect(checkEnvelope({ ...VALID, request: { id: 'req_1' } })).toMatchObject({ request: { id: 'req_1' } });
  });
});
