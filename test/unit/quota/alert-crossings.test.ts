import type { AlertRuleRow } from '../../../db/quota/alert-rules';
import fc from 'fast-check';
import {
  crossingUsages,
  crossingsOf,
  subjectMatches,
} from '../../../services/quota/alerts/crossings';
import type { PolicyVerdict } from '../../../services/quota/consumption/verdicts';

const rule = (extra: Partial<AlertRuleRow> = {}): AlertRuleRow => ({
  id: 'alr_1',
  name: 'r',
  policy_id: null,
  resource_id: null,
  subject_filter: null,
  threshold_pct: 80,
  webhook_endpoint_ids: [],
  emails: [],
  cooldown_seconds: 0,
  enabled: true,
  created_at: '',
  updated_at: '',
  ...extra,
});

/** A quota verdict: `used` after admitting `requested` of `limit`. */
const verdict = (used: bigint, requested: bigint, limit: bigint, extra = {}): PolicyVerdict =>
  ({
    policy: { id: 'pol_1', resource_id: 'res_1' },
    requested,
    allowed: true,
    limit,
    used,
    remaining: limit > used ? limit - used : 0n,
    overage: 0n,
    window: { currentKey: '2026-11-25' },
    retryAfterMs: null,
    ...extra,
  }) as unknown as PolicyVerdict;

describe('quota alerts: which admitted requests cross a rule (pure)', () => {
  it('crosses when usage goes from below the threshold to at or above it, exactly', () => {
    expect(crossingsOf([rule()], [verdict(80n, 1n, 100n)], 's')).toEqual([
      {
        ruleId: 'alr_1',
        policyId: 'pol_1',
        windowId: '2026-11-25',
        thresholdPct: 80,
        usagePct: '80.00',
        cooldownSeconds: 0,
      },
    ]);
    expect(crossingsOf([rule()], [verdict(79n, 79n, 100n)], 's')).toEqual([]);
    // Already at the threshold before: no new crossing.
    expect(crossingsOf([rule()], [verdict(81n, 1n, 100n)], 's')).toEqual([]);
    expect(crossingsOf([rule()], [verdict(100n, 100n, 100n)], 's')).toHaveLength(1);
  });

  it('holds past 2^53 and past 100% (allow_overage), rounding the percentage down', () => {
    const limit = 2n ** 60n;
    const used = (limit * 1000n) / 100n;
    expect(crossingsOf([rule({ threshold_pct: 1000 })], [verdict(used, used, limit)], 's')).toEqual(
      [expect.objectContaining({ usagePct: '1000.00' })],
    );
    expect(crossingsOf([rule({ threshold_pct: 1 })], [verdict(2n, 2n, 3n)], 's')).toEqual([
      expect.objectContaining({ usagePct: '66.66' }),
    ]);
  });

  it('skips denied requests, refunds, rate limits, disabled rules and rules watching something else', () => {
    const crossing = verdict(80n, 10n, 100n);
    expect(crossingsOf([rule()], [verdict(80n, 10n, 100n, { allowed: false })], 's')).toEqual([]);
    expect(crossingsOf([rule()], [verdict(80n, -10n, 100n)], 's')).toEqual([]);
    expect(crossingsOf([rule()], [verdict(80n, 10n, 100n, { window: null })], 's')).toEqual([]);
    expect(crossingsOf([rule({ enabled: false })], [crossing], 's')).toEqual([]);
    expect(crossingsOf([rule({ policy_id: 'pol_2' })], [crossing], 's')).toEqual([]);
    expect(crossingsOf([rule({ resource_id: 'res_2' })], [crossing], 's')).toEqual([]);
    expect(crossingsOf([rule({ subject_filter: 't' })], [crossing], 's')).toEqual([]);
    expect(
      crossingsOf([rule({ policy_id: 'pol_1', resource_id: 'res_1' })], [crossing], 's'),
    ).toHaveLength(1);
  });

  it('matches a subject exactly, or by prefix with a trailing *', () => {
    expect(subjectMatches(null, 'anything')).toBe(true);
    expect(subjectMatches('acme:1', 'acme:1')).toBe(true);
    expect(subjectMatches('acme:1', 'acme:10')).toBe(false);
    expect(subjectMatches('acme:*', 'acme:10')).toBe(true);
    expect(subjectMatches('acme:*', 'acme')).toBe(false);
    expect(subjectMatches('*', 'x')).toBe(true);
  });

  it('crossingUsages: a decision crosses exactly when it goes from below one to at or above it, as crossingsOf finds (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }),
        fc.bigInt({ min: 0n, max: 1n << 60n }),
        fc.bigInt({ min: 1n, max: 1n << 55n }),
        (pct, limit, before, requested) => {
          const watching = rule({ threshold_pct: pct });
          const [usage] = crossingUsages(
            [watching],
            { id: 'pol_1', resource_id: 'res_1' },
            's',
            limit,
          );
          const after = before + requested;
          const crosses =
            crossingsOf([watching], [verdict(after, requested, limit)], 's').length === 1;
          expect(before < usage! && after >= usage!).toBe(crosses);
        },
      ),
      { numRuns: 2_000 },
    );
    expect(
      crossingUsages(
        [rule({ enabled: false }), rule({ policy_id: 'pol_2' })],
        { id: 'pol_1', resource_id: 'res_1' },
        's',
        10n,
      ),
    ).toEqual([]);
  });
});
