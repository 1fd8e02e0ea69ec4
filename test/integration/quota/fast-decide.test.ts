import fc from 'fast-check';
import { decideQuota } from '../../../services/quota/consumption/verdicts';
import { MICRO, takeTokens } from '../../../services/quota/consumption/verdicts';
import { BUCKET_EXPIRY_MAX_MS, decideFastStates } from '../../../db/quota/fast-decide';
import { closeRedis, connectedRedis, type Redis } from '../../../db/redis';
import { config } from './support';

/**
 * The one-round-trip decision script (db/quota/fast-decide.ts) against the TypeScript arithmetic
 * both enforcement modes answer with (decideQuota and takeTokens, verdicts.ts): on random states, limits and
 * amounts, from zero to far past 2^53, it admits exactly what they admit and writes the state they
 * compute. Keys under a prefix of their own; no ledger entry is appended.
 */
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const NOW = 1_800_000_000_000;

describe('the fast decision script decides as the arithmetic of verdicts.ts does (property)', () => {
  let redis: Redis;
  let n = 0;
  const guard = { keys: ['gen-a', 'gen-b'], expected: ['0', '0'] };
  beforeAll(async () => {
    redis = await connectedRedis(config, `quota-test-decide-${process.pid}:`);
  });
  afterAll(async () => {
    const keys = await redis.keys(`quota-test-decide-${process.pid}:*`);
    if (keys.length > 0) await redis.del(...keys.map((k) => k.split(':').slice(1).join(':')));
    await closeRedis(redis);
  });

  it('quota windows: admits, refuses and writes as decideQuota, exactly at any size', async () => {
    const usage = fc.bigInt({ min: 0n, max: 1n << 62n });
    await fc.assert(
      fc.asyncProperty(
        fc.array(usage, { minLength: 1, maxLength: 3 }),
        fc.bigInt({ min: 1n, max: MAX_SAFE }),
        // Any amount, or one that lands within 2 of the limit (where a comparison is decided).
        fc.oneof(
          fc.bigInt({ min: 1n, max: 1n << 60n }),
          fc.bigInt({ min: -(1n << 60n), max: -1n }),
          fc.bigInt({ min: -2n, max: 2n }).map((d) => ({ nearLimit: d })),
        ),
        fc.boolean(),
        async (windows, limit, amount, allowOverage) => {
          const used = windows.reduce((a, b) => a + b, 0n);
          const requested =
            typeof amount === 'bigint' ? amount : limit - used + amount.nearLimit || 1n;
          const key = `q${++n}`;
          const fields = windows.map((_, i) => `w:${i}`);
          await redis.hset(
            key,
            Object.fromEntries(fields.map((f, i) => [f, windows[i]!.toString()])),
          );
          const reply = await decideFastStates(redis, {
            partition: 0,
            guard,
            token: `t${n}`,
            nowMs: NOW,
            ledger: '',
            policies: [
              {
                kind: 'quota',
                key,
                requested,
                limit,
                allowOverage,
                fields,
                expireAtMs: null,
                thresholds: [],
              },
            ],
          });
          const expected = decideQuota({
            used,
            limit,
            requested,
            onExceed: allowOverage ? 'allow_overage' : 'block',
          });
          expect(reply).toEqual({ status: 'decided', allowed: expected.allowed, pre: [{ used }] });
          const current = windows.at(-1)!;
          const written = expected.allowed ? current + requested : current;
          expect(await redis.hget(key, fields.at(-1)!)).toBe(
            (written < 0n ? 0n : written).toString(),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('token buckets: admits, refuses and writes as takeTokens, refill and expiry included', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 1n, max: MAX_SAFE }),
        fc.double({ min: 5.000001e-7, max: 1e14 - 1, noNaN: true }),
        fc.option(
          fc.tuple(
            fc.double({ min: 0, max: 1, noNaN: true }),
            fc.bigInt({ min: 0n, max: MICRO - 1n }),
            fc.oneof(fc.constant(0), fc.integer({ min: -5_000, max: 5_000 }), fc.nat(1e9)),
          ),
        ),
        // Any amount, or one within 2 of the whole tokens the bucket held.
        fc.oneof(
          fc.bigInt({ min: 1n, max: MAX_SAFE }),
          fc.bigInt({ min: -2n, max: 2n }).map((d) => ({ nearHeld: d })),
        ),
        fc.boolean(),
        async (capacity, ratePerSec, previous, amount, allowOverage) => {
          const key = `b${++n}`;
          const whole = previous ? BigInt(Math.floor(previous[0] * Number(capacity))) : capacity;
          const state = previous && {
            micro: whole >= capacity ? capacity * MICRO : whole * MICRO + previous[1],
            updatedMs: NOW - previous[2],
          };
          const near = typeof amount === 'bigint' ? amount : whole + amount.nearHeld;
          const requested = near < 1n ? 1n : near;
          if (state)
            await redis.hset(key, { micro: state.micro.toString(), ms: String(state.updatedMs) });
          const reply = await decideFastStates(redis, {
            partition: 0,
            guard,
            token: `t${n}`,
            nowMs: NOW,
            ledger: '',
            policies: [{ kind: 'bucket', key, requested, capacity, allowOverage, ratePerSec }],
          });
          const onExceed = allowOverage ? 'allow_overage' : 'block';
          const expected = takeTokens(state, { capacity, ratePerSec, onExceed }, requested, NOW);
          expect(reply).toEqual({ status: 'decided', allowed: expected.allowed, pre: [state] });
          if (!expected.allowed) return;
          expect(await redis.hmget(key, 'micro', 'ms')).toEqual([
            expected.state.micro.toString(),
            String(expected.state.updatedMs),
          ]);
          const fullInMs = Math.ceil(
            Number(capacity * MICRO - expected.state.micro) / (ratePerSec * 1_000),
          );
          const expireAt =
            fullInMs <= BUCKET_EXPIRY_MAX_MS ? expected.state.updatedMs + fullInMs + 1 : -1;
          expect(await redis.pexpiretime(key)).toBe(expireAt);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses all of a request when one policy refuses, answers a moved generation, and stops before writing a crossing', async () => {
    const quota = (key: string, limit: bigint, thresholds: bigint[] = []) => ({
      kind: 'quota' as const,
      key,
      requested: 5n,
      limit,
      allowOverage: false,
      fields: ['w:now'],
      expireAtMs: null,
      thresholds,
    });
    const decide = (policies: ReturnType<typeof quota>[], expected = guard.expected) =>
      decideFastStates(redis, {
        partition: 0,
        guard: { keys: guard.keys, expected },
        token: 'all-or-nothing',
        nowMs: NOW,
        ledger: '',
        policies,
      });
    expect(await decide([quota('roomy', 10n), quota('tight', 4n)])).toMatchObject({
      allowed: false,
    });
    expect(await redis.exists('roomy')).toBe(0);
    expect(await decide([quota('roomy', 10n)], ['0', '1'])).toEqual({ status: 'generation-moved' });
    expect(await decide([quota('roomy', 10n, [5n])])).toEqual({ status: 'crossing' });
    expect(await decide([quota('roomy', 10n, [9n, 1n])])).toEqual({ status: 'crossing' });
    expect(await redis.exists('roomy')).toBe(0);
    expect(await decide([quota('roomy', 10n, [6n, 9n])])).toMatchObject({ allowed: true });
    expect(await redis.hget('roomy', 'w:now')).toBe('5');
  });
});
