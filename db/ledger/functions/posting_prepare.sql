-- What a posting needs no lock for: unknown accounts, amounts at their account's scale, rule 1
-- (facts that never change). Returns the refusal, or the legs' asset types and minor units.
CREATE OR REPLACE FUNCTION ledger.posting_prepare(p_account_ids uuid[], p_directions text[], p_amounts text[])
 RETURNS ledger.posting_prepared
 LANGUAGE plpgsql
AS $function$
DECLARE
  r ledger.posting_prepared;
  v_ok boolean;
BEGIN
  -- The common case in one query: every account known, every amount a positive plain decimal at
  -- its account's scale of at most 38 digits, and rule 1 holds. Then the legs' asset types and
  -- minor units are those the checks below would compute. Otherwise the checks below run, in
  -- their order, and name the refusal exactly.
  WITH legs AS (
    SELECT u.ord, u.direction, a.asset_type_id AS asset, t.scale, m,
           (m IS NOT NULL AND m[1] IS NULL AND length(coalesce(m[3], '')) <= t.scale
            AND length(coalesce(nullif(ltrim(m[2] || rpad(coalesce(m[3], ''), t.scale, '0'), '0'), ''), '0')) <= 38)
             AS well_formed
    FROM unnest(p_account_ids, p_directions, p_amounts) WITH ORDINALITY AS u(id, direction, amount, ord)
    LEFT JOIN ledger.accounts a ON a.account_id = u.id
    LEFT JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id
    LEFT JOIN LATERAL regexp_match(u.amount, '^(-)?([0-9]+)(?:\.([0-9]+))?$') AS m ON true),
  valued AS (
    SELECT l.ord, l.direction, l.asset, l.well_formed,
           CASE WHEN l.well_formed THEN (l.m[2] || rpad(coalesce(l.m[3], ''), l.scale, '0'))::numeric END AS minor
    FROM legs l),
  sides AS (
    SELECT v.asset, coalesce(sum(v.minor) FILTER (WHERE v.direction = 'debit'), 0) AS d,
           coalesce(sum(v.minor) FILTER (WHERE v.direction = 'credit'), 0) AS c
    FROM valued v GROUP BY v.asset)
  SELECT (SELECT bool_and(v.asset IS NOT NULL AND v.well_formed AND v.minor > 0) FROM valued v)
           AND NOT EXISTS (SELECT 1 FROM sides s WHERE s.d <> s.c OR s.d = 0),
         (SELECT array_agg(v.asset ORDER BY v.ord) FROM valued v),
         (SELECT array_agg(v.minor ORDER BY v.ord) FROM valued v)
  INTO v_ok, r.assets, r.minors;
  IF v_ok THEN RETURN r; END IF;
  r.assets := NULL;
  r.minors := NULL;

  -- Unknown accounts (or another tenant's: row-level security hides them), in order of appearance.
  SELECT jsonb_build_object('code', 'REFERENCE_NOT_FOUND',
           'message', 'unknown account: ' || string_agg(m.id::text, ', ' ORDER BY m.first),
           'details', jsonb_build_object('account_ids', jsonb_agg(m.id ORDER BY m.first)))
  INTO r.error
  FROM (SELECT e.id, min(e.ord) AS first
        FROM unnest(p_account_ids) WITH ORDINALITY AS e(id, ord)
        WHERE NOT EXISTS (SELECT 1 FROM ledger.accounts a WHERE a.account_id = e.id)
        GROUP BY e.id) m
  HAVING count(*) > 0;
  IF r.error IS NOT NULL THEN RETURN r; END IF;

  -- Amounts at each account's scale (as decimalToMinor in money.ts), first bad entry wins.
  SELECT x.problem INTO r.error
  FROM (
    SELECT e.ord,
           CASE
             WHEN e.m IS NULL OR e.m[1] IS NOT NULL THEN jsonb_build_object('code', 'INVALID_AMOUNT',
               'message', format('"%s" is not a plain decimal string', e.amount))
             WHEN length(coalesce(e.m[3], '')) > e.scale THEN jsonb_build_object('code', 'INVALID_AMOUNT_SCALE',
               'message', format('"%s" has more than %s decimals', e.amount, e.scale))
             WHEN length(coalesce(nullif(ltrim(e.m[2] || rpad(coalesce(e.m[3], ''), e.scale, '0'), '0'), ''), '0')) > 38
               THEN jsonb_build_object('code', 'INVALID_AMOUNT',
               'message', format('"%s" has more than 38 digits', e.amount))
             WHEN (e.m[2] || rpad(coalesce(e.m[3], ''), e.scale, '0'))::numeric = 0 THEN jsonb_build_object(
               'code', 'INVALID_AMOUNT', 'message', format('entries[%s].amount must be greater than zero', e.ord - 1))
           END AS problem
    FROM (SELECT u.ord, u.amount, t.scale, regexp_match(u.amount, '^(-)?([0-9]+)(?:\.([0-9]+))?$') AS m
          FROM unnest(p_account_ids, p_amounts) WITH ORDINALITY AS u(id, amount, ord)
          JOIN ledger.accounts a ON a.account_id = u.id
          JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id) e
  ) x
  WHERE x.problem IS NOT NULL
  ORDER BY x.ord LIMIT 1;
  IF r.error IS NOT NULL THEN RETURN r; END IF;

  SELECT array_agg(a.asset_type_id ORDER BY u.ord),
         array_agg((m[2] || rpad(coalesce(m[3], ''), t.scale, '0'))::numeric ORDER BY u.ord)
  INTO r.assets, r.minors
  FROM unnest(p_account_ids, p_amounts) WITH ORDINALITY AS u(id, amount, ord)
  JOIN ledger.accounts a ON a.account_id = u.id
  JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id
  CROSS JOIN LATERAL regexp_match(u.amount, '^(-)?([0-9]+)(?:\.([0-9]+))?$') AS m;

  -- Rule 1: per asset type, debits equal credits and both sides are present.
  SELECT jsonb_build_object('code', 'UNBALANCED_TRANSACTION',
           'message', 'debits must equal credits per asset type, with both sides present',
           'details', jsonb_agg(jsonb_build_object('asset_type_id', s.asset, 'debits_minor', s.d::text,
                                                   'credits_minor', s.c::text) ORDER BY s.first))
  INTO r.error
  FROM (SELECT l.asset, min(l.ord) AS first,
               coalesce(sum(l.minor) FILTER (WHERE l.direction = 'debit'), 0) AS d,
               coalesce(sum(l.minor) FILTER (WHERE l.direction = 'credit'), 0) AS c
        FROM unnest(r.assets, p_directions, r.minors) WITH ORDINALITY AS l(asset, direction, minor, ord)
        GROUP BY l.asset) s
  WHERE s.d <> s.c OR s.d = 0
  HAVING count(*) > 0;
  IF r.error IS NOT NULL THEN
    r.assets := NULL;
    r.minors := NULL;
  END IF;
  RETURN r;
END $function$;
