import vm from 'node:vm';
import { BackendTerminatedError, ConnectionError } from 'slonik';
import { isBackendUnreachable } from '../../db/unreachable';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
const wrapping = (cause: unknown) => new Error('wrapper', { cause });

describe('isBackendUnreachable: which errors are a backend out of reach (503), not a fault (500)', () => {
  it('takes a Postgres that is going away, starting or not reached, also under wrappers', () => {
    for (const state of ['57P01', '57P02', '57P03', '08006', '08001'])
      expect([state, isBackendUnreachable(wrapping(withCode(state)))]).toEqual([state, true]);
    expect(isBackendUnreachable(new ConnectionError('refused'))).toBe(true);
    expect(isBackendUnreachable(new BackendTerminatedError(new Error('gone')))).toBe(true);
    expect(isBackendUnreachable(wrapping(withCode('ECONNREFUSED')))).toBe(true);
    // Made in another realm (as Node's socket errors are, seen from jest's sandbox).
    const foreign = vm.runInNewContext(
      "Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })",
    ) as unknown;
    expect(foreign instanceof Error).toBe(false);
    expect(isBackendUnreachable(foreign)).toBe(true);
    expect(isBackendUnreachable(wrapping(foreign))).toBe(true);
  });

  it("takes ioredis's refusals while it has no connection", () => {
    expect(isBackendUnreachable(new Error('Connection is closed.'))).toBe(true);
    expect(
      isBackendUnreachable(
        new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      ),
    ).toBe(true);
    expect(isBackendUnreachable(new Error('Command timed out'))).toBe(true);
  });

  it("takes a Redis Cluster's refusals while a master fails over", () => {
    for (const message of [
      'Too many Cluster redirections. Last error: Error: Connection is closed.',
      "Cluster isn't ready and enableOfflineQueue options is false",
      'CLUSTERDOWN The cluster is down',
      'TRYAGAIN Multiple keys request during rehashing of slot',
      'Failed to refresh slots cache.',
    ])
      expect([message, isBackendUnreachable(new Error(message))]).toEqual([message, true]);
    // A request the cluster can never serve is a bug, not an outage.
    expect(
      isBackendUnreachable(new Error("CROSSSLOT Keys in request don't hash to the same slot")),
    ).toBe(false);
  });

  it('leaves every other error a 500: constraint violations, overflow, plain bugs', () => {
    expect(isBackendUnreachable(withCode('23505'))).toBe(false);
    expect(isBackendUnreachable(wrapping(withCode('22003')))).toBe(false);
    expect(isBackendUnreachable(new TypeError('x is undefined'))).toBe(false);
    expect(isBackendUnreachable('a string')).toBe(false);
  });
});
