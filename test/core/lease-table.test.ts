import { describe, expect, test } from 'vitest';
import { LeaseTable } from '../../src/lease-table.js';

const lease = (token: string, expiresAt: number) => ({ token, expiresAt });

describe('LeaseTable', () => {
  test('holds, finds and forgets leases by event id', () => {
    const table = new LeaseTable();
    table.set('a', lease('ta', 10));
    table.set('b', lease('tb', 20));
    expect(table.size).toBe(2);
    expect(table.get('a')).toEqual(lease('ta', 10));
    table.delete('a');
    expect(table.get('a')).toBeUndefined();
    expect(table.get('b')).toEqual(lease('tb', 20));
    expect(table.size).toBe(1);
  });

  test('emptied by its last delete, it keeps working (the table is replaced, not shrunk)', () => {
    const table = new LeaseTable();
    for (let round = 0; round < 3; round++) {
      table.set(`evt_${round}`, lease('t', 10));
      table.delete(`evt_${round}`);
      expect(table.size).toBe(0);
      expect(table.get(`evt_${round}`)).toBeUndefined();
    }
    table.set('next', lease('t', 10));
    expect(table.get('next')).toEqual(lease('t', 10));
  });

  test('deleting an id it does not hold never drops the one lease it holds', () => {
    const table = new LeaseTable();
    table.set('held', lease('t', 10));
    table.delete('other');
    expect(table.size).toBe(1);
    expect(table.get('held')).toEqual(lease('t', 10));
  });

  test('dropExpired forgets every expired lease, the last one included, and keeps live ones', () => {
    const table = new LeaseTable();
    table.set('old-1', lease('t', 5));
    table.set('live', lease('t', 50));
    table.set('old-2', lease('t', 10));
    table.dropExpired(10);
    expect(table.size).toBe(1);
    expect(table.get('live')).toEqual(lease('t', 50));
    table.dropExpired(50);
    expect(table.size).toBe(0);
    table.set('again', lease('t', 60));
    expect(table.size).toBe(1);
  });
});
