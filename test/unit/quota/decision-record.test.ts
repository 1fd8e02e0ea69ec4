import type { EffectivePolicyRow } from '../../../db/quota/consumption';
import {
  answerOfRecord,
  assertSameRequest,
  assertVerdictsAgree,
  recordInPostgres,
  recordInRedis,
  redisRecordPrefix,
  verdictsFrom,
  type DecisionInputs,
} from '../../../services/quota/consumption/records';

const policy = (over: Partial<EffectivePolicyRow>): EffectivePolicyRow => ({
  id: 'pol_quota',
  name: 'calls-per-day',
  resource_id: 'res_calls',
  resource: 'calls',
  kind: 'quota',
  limit_amount: '10',
  limit_override: null,
  window_kind: 'fixed',
  window_unit: 'day',
  window_size: 1,
  tz: 'UTC',
  bucket_capacity: null,
  refill_rate_per_sec: null,
  enforcement_mode: 'fast',
  on_exceed: 'block',
  on_backend_error: null,
  enabled: true,
  created_at: '2026-11-28T00:00:00.000Z',
  updated_at: '2026-11-28T00:00:00.000Z',
  source: 'plan',
  ...over,
});
const QUOTA = policy({});
const BUCKET = policy({
  id: 'pol_rate',
  kind: 'rate_limit',
  limit_amount: null,
  window_kind: null,
  window_unit: null,
  window_size: null,
  tz: null,
  bucket_capacity: '5',
  refill_rate_per_sec: 1,
});
const NOW_MS = Date.parse('2026-11-28T12:00:00.000Z');
const decision: DecisionInputs = { eventId: 'evt_1', nowMs: NOW_MS, policies: [QUOTA, BUCKET] };
const request = (amount: bigint) => ({
  tenantId: 'ten_1',
  subject: 'user:1',
  amounts: new Map([['calls', amount]]),
});
const answerOf = (verdicts: ReturnType<typeof verdictsFrom>, eventId: string) => ({
  allowed: verdicts.every((v) => v.allowed),
  eventId,
  used: verdicts.map((v) => v.used),
});

describe("a quota decision's record under its idempotency key (records.ts)", () => {
  it('keeps the answer itself as Postgres and Redis record it for the general and careful paths', () => {
    const answer = { allowed: true, event_id: 'evt_0', results: [] };
    expect(recordInPostgres(answer)).toEqual({ answer });
    const redis = recordInRedis(JSON.stringify({ hash: 'ab12', answer }));
    expect(redis).toEqual({ hashHex: 'ab12', record: { answer } });
    expect(answerOfRecord(redis.record, request(1n), answerOf)).toEqual(answer);
  });

  it("makes a one-script decision's answer again from the state each policy was decided from", () => {
    // A quota at 7 of 10 and a bucket never used (''), as the script appends them after the prefix.
    const text = `${redisRecordPrefix('ab12', decision)}\n7\n`;
    const { hashHex, record } = recordInRedis<ReturnType<typeof answerOf>>(text);
    expect(hashHex).toBe('ab12');
    expect(record).toEqual({ decision, pre: [{ used: 7n }, null] });
    expect(answerOfRecord(record, request(3n), answerOf)).toEqual({
      allowed: true,
      eventId: 'evt_1',
      used: [10n, 3n],
    });
    expect(answerOfRecord(record, request(4n), answerOf).allowed).toBe(false);
  });

  it("reads a bucket's recorded state as its micro-units and the instant it was last filled", () => {
    const text = `${redisRecordPrefix('ab12', decision)}\n0\n3000000 ${NOW_MS}`;
    const { record } = recordInRedis(text);
    expect(record).toEqual({
      decision,
      pre: [{ used: 0n }, { micro: 3_000_000n, updatedMs: NOW_MS }],
    });
  });

  it("makes a one-statement decision's answer again from each quota's usage before it", () => {
    const inputs = { ...decision, policies: [QUOTA] };
    const record = recordInPostgres<ReturnType<typeof answerOf>>({ decision: inputs, used: ['9'] });
    expect(record).toEqual({ decision: inputs, pre: [{ used: 9n }] });
    expect(answerOfRecord(record, request(1n), answerOf)).toEqual({
      allowed: true,
      eventId: 'evt_1',
      used: [10n],
    });
    expect(answerOfRecord(record, request(2n), answerOf).allowed).toBe(false);
  });

  it('counts usage past 2^53 without losing a unit', () => {
    const big = 2n ** 60n;
    const inputs = {
      ...decision,
      policies: [policy({ limit_amount: null, limit_override: (big * 2n).toString() })],
    };
    const record = recordInPostgres<ReturnType<typeof answerOf>>({
      decision: inputs,
      used: [big.toString()],
    });
    expect(answerOfRecord(record, request(1n), answerOf).used).toEqual([big + 1n]);
  });

  it('refuses another body under the key with 409 idempotency_key_reused', () => {
    expect(() => assertSameRequest('ab12', 'ab12')).not.toThrow();
    let refusal: unknown;
    try {
      assertSameRequest('ab12', 'cd34');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ code: 'idempotency_key_reused' });
  });

  it('is loud when a decision made elsewhere and the verdicts made here disagree', () => {
    const verdicts = verdictsFrom(
      { tenantId: 'ten_1', subject: 'user:1', nowMs: NOW_MS },
      [QUOTA],
      request(4n).amounts,
      [{ used: 7n }],
    );
    expect(() => assertVerdictsAgree(verdicts, false, 'the script')).not.toThrow();
    expect(() => assertVerdictsAgree(verdicts, true, 'the script')).toThrow(
      'the script and the verdicts disagree',
    );
  });
});
