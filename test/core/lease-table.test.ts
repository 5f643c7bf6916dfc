import { describe, expect, test } from 'vitest';
import { LeaseTable } from '../../src/lease-table.js';

/** A lease as its holder and expiry, whichever shape the table keeps it in. */
const leaseOf = (table: LeaseTable, key: string) => {
  const lease = table.get(key);
  return lease && { token: lease.token, expiresAt: lease.expiresAt };
};

describe('LeaseTable', () => {
  test('holds, finds and forgets leases by key', () => {
    const table = new LeaseTable();
    table.set('a', 'ta', 10);
    table.set('b', 'tb', 20);
    expect(table.size).toBe(2);
    expect(leaseOf(table, 'a')).toEqual({ token: 'ta', expiresAt: 10 });
    table.delete('a');
    expect(table.get('a')).toBeUndefined();
    expect(leaseOf(table, 'b')).toEqual({ token: 'tb', expiresAt: 20 });
    expect(table.size).toBe(1);
  });

  test('emptied by its last delete, it keeps working, alone or with others', () => {
    const table = new LeaseTable();
    for (let round = 0; round < 3; round++) {
      table.set(`evt_${round}`, 't', 10);
      table.delete(`evt_${round}`);
      expect(table.size).toBe(0);
      expect(table.get(`evt_${round}`)).toBeUndefined();
    }
    for (let round = 0; round < 3; round++) {
      table.set(`x_${round}`, 'tx', 10);
      table.set(`y_${round}`, 'ty', 20);
      table.delete(`x_${round}`);
      expect(leaseOf(table, `y_${round}`)).toEqual({ token: 'ty', expiresAt: 20 });
      table.delete(`y_${round}`);
      expect(table.size).toBe(0);
    }
    table.set('next', 't', 10);
    expect(leaseOf(table, 'next')).toEqual({ token: 't', expiresAt: 10 });
    expect(table.size).toBe(1);
  });

  test('a second lease keeps the first one whole, and a third joins them', () => {
    const table = new LeaseTable();
    table.set('first', 't1', 10);
    table.set('second', 't2', 20);
    table.set('third', 't3', 30);
    expect(table.size).toBe(3);
    expect(leaseOf(table, 'first')).toEqual({ token: 't1', expiresAt: 10 });
    expect(leaseOf(table, 'second')).toEqual({ token: 't2', expiresAt: 20 });
    expect(leaseOf(table, 'third')).toEqual({ token: 't3', expiresAt: 30 });
  });

  test('setting a held key again replaces its holder and expiry, alone or with others', () => {
    const table = new LeaseTable();
    table.set('a', 'old', 10);
    table.set('a', 'new', 15);
    expect(table.size).toBe(1);
    expect(leaseOf(table, 'a')).toEqual({ token: 'new', expiresAt: 15 });
    table.set('b', 'tb', 20);
    table.set('b', 'tb2', 25);
    expect(table.size).toBe(2);
    expect(leaseOf(table, 'b')).toEqual({ token: 'tb2', expiresAt: 25 });
  });

  test('deleting a key it does not hold never drops a lease it holds', () => {
    const table = new LeaseTable();
    table.set('held', 't', 10);
    table.delete('other');
    expect(table.size).toBe(1);
    expect(leaseOf(table, 'held')).toEqual({ token: 't', expiresAt: 10 });
    table.set('held-too', 't2', 20);
    table.delete('other');
    expect(table.size).toBe(2);
  });

  test('dropExpired forgets every expired lease, the last one included, and keeps live ones', () => {
    const table = new LeaseTable();
    table.set('old-1', 't', 5);
    table.set('live', 't', 50);
    table.set('old-2', 't', 10);
    table.dropExpired(10);
    expect(table.size).toBe(1);
    expect(leaseOf(table, 'live')).toEqual({ token: 't', expiresAt: 50 });
    table.dropExpired(50);
    expect(table.size).toBe(0);
    table.set('again', 't', 60);
    expect(table.size).toBe(1);
    table.dropExpired(59);
    expect(table.size).toBe(1);
    table.dropExpired(60);
    expect(table.size).toBe(0);
    expect(table.get('again')).toBeUndefined();
  });
});
