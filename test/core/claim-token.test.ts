import { describe, expect, test } from 'vitest';
import { nextClaimToken } from '../../src/claim-token.js';

describe('claim tokens', () => {
  test("one version 4 UUID per process, ':', and a base-36 counter", () => {
    const first = nextClaimToken();
    const second = nextClaimToken();
    const shape = /^([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}):([0-9a-z]+)$/;
    const [, uuid, count] = shape.exec(first) ?? [];
    expect(uuid, first).toBeDefined();
    expect(second).toBe(`${uuid}:${(Number.parseInt(count!, 36) + 1).toString(36)}`);
  });
});
