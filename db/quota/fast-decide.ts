import { redisKeysScript, type Redis } from '../redis';
import type { GenerationGuard } from './fast-state';
import { ledgerStreamKey } from './partitions';

/**
 * A fast-mode decision in one round trip: one script checks the request's catalogue generations,
 * answers an idempotency key's recorded decision, reads each policy's state, decides with the
 * same exact arithmetic as services/quota/consumption/verdicts.ts (decideQuota: a quota's window;
 * takeTokens: a rate limit's bucket, in millionths; decimal strings, exact at any size), and, all admitting,
 * writes the states, appends the ledger entries to the write-ahead stream and records the
 * decision under the idempotency key, atomically. No lock, no retry: Redis runs it alone.
 *
 * It answers the state it decided from; the caller makes the verdicts from that state with the
 * TypeScript arithmetic (a test holds both to the same decisions). A request whose admission would
 * cross an alert threshold is answered `crossing` with nothing written: the caller decides it on
 * the path that records crossings (in-redis.ts), which crossings are rare enough to afford.
 */
export type FastPolicyInput =
  | {
      kind: 'quota';
      key: string;
      /** Signed: a refund's is negative. */
      requested: bigint;
      limit: bigint;
      allowOverage: boolean;
      /** The window's fields (a rolling window's buckets), the current one last. */
      fields: string[];
      expireAtMs: number | null;
      /** Usage at which an alert rule watching it is crossed (ceil(pct × limit / 100)). */
      thresholds: bigint[];
    }
  | {
      kind: 'bucket';
      key: string;
      requested: bigint;
      capacity: bigint;
      allowOverage: boolean;
      ratePerSec: number;
    };

export interface FastDecisionInput {
  /** The subject's partition (db/quota/partitions.ts): every key here is in it. */
  partition: number;
  guard: GenerationGuard;
  /** Written as each state's version (the optimistic writers' token) and the event id. */
  token: string;
  nowMs: number;
  policies: FastPolicyInput[];
  /** Ledger entries (JSON) appended to the stream when admitted. */
  ledger: string;
  /** The decision's record (prefix + the state it read), when the request names a key. */
  idempotency?: { key: string; recordPrefix: string; ttlSeconds: number };
}

/** A policy's state as the script read it: a quota's usage, a bucket's (null: full). */
export type FastPreState = { used: bigint } | { micro: bigint; updatedMs: number } | null;

export type FastDecisionReply =
  | { status: 'decided'; allowed: boolean; pre: FastPreState[] }
  | { status: 'generation-moved' }
  | { status: 'recorded'; record: string }
  | { status: 'crossing' };

/** A bucket idle this long is stored without expiry rather than until it is full again. */
export const BUCKET_EXPIRY_MAX_MS = 400 * 24 * 3_600_000;

const DECIDE_SCRIPT = `
local function ucmp(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  if a == b then return 0 end
  return a < b and -1 or 1
end
local function digits(out)
  local s = string.reverse(table.concat(out)):gsub('^0+', '')
  return s == '' and '0' or s
end
local function uadd(a, b)
  local out, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local d = carry + (i > 0 and a:byte(i) - 48 or 0) + (j > 0 and b:byte(j) - 48 or 0)
    carry = d >= 10 and 1 or 0
    out[#out + 1] = d % 10
    i, j = i - 1, j - 1
  end
  return digits(out)
end
local function usub(a, b)
  local out, borrow, i, j = {}, 0, #a, #b
  while i > 0 do
    local d = (a:byte(i) - 48) - borrow - (j > 0 and b:byte(j) - 48 or 0)
    borrow = d < 0 and 1 or 0
    out[#out + 1] = d % 10
    i, j = i - 1, j - 1
  end
  return digits(out)
end
local function split(s)
  if s:sub(1, 1) == '-' then return true, s:sub(2) end
  return false, s
end
local function signed(negative, m) return (negative and m ~= '0') and ('-' .. m) or m end
local function add(a, b)
  local na, ma = split(a)
  local nb, mb = split(b)
  if na == nb then return signed(na, uadd(ma, mb)) end
  local c = ucmp(ma, mb)
  if c >= 0 then return signed(na, usub(ma, mb)) end
  return signed(nb, usub(mb, ma))
end
local function cmp(a, b)
  local na, ma = split(a)
  local nb, mb = split(b)
  if na ~= nb then return na and -1 or 1 end
  local c = ucmp(ma, mb)
  return na and -c or c
end
local function max0(a) return a:sub(1, 1) == '-' and '0' or a end
local function min(a, b) return cmp(a, b) <= 0 and a or b end
local function int(x) return string.format('%.0f', x) end

local n, token, now = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local hasIdem = ARGV[6] == '1'
local stream, idemKey = KEYS[n + 3], KEYS[n + 4]
for g = 1, 2 do
  if (redis.call('GET', KEYS[g]) or '0') ~= ARGV[3 + g] then return { 2 } end
end
if hasIdem then
  local recorded = redis.call('GET', idemKey)
  if recorded then return { 3, recorded } end
end

local pos, plans, pre, allowed = 10, {}, {}, true
for i = 1, n do
  local key, kind, requested, limit, over = KEYS[2 + i], ARGV[pos], ARGV[pos + 1], ARGV[pos + 2], ARGV[pos + 3] == '1'
  local plan = { key = key, kind = kind, requested = requested }
  if kind == 'q' then
    local nFields, expireAt, nThresholds = tonumber(ARGV[pos + 4]), ARGV[pos + 5], tonumber(ARGV[pos + 6])
    local fields = {}
    for f = 1, nFields do fields[f] = ARGV[pos + 6 + f] end
    local values = redis.call('HMGET', key, unpack(fields))
    local used = '0'
    for f = 1, nFields do used = add(used, values[f] or '0') end
    local after = add(used, requested)
    local ok = cmp(after, limit) <= 0 or over
    plan.fields, plan.expireAt = fields, expireAt
    plan.current = max0(add(values[nFields] or '0', requested))
    plan.crosses = false
    if cmp(requested, '0') > 0 then
      for t = 1, nThresholds do
        local threshold = ARGV[pos + 6 + nFields + t]
        if cmp(used, threshold) < 0 and cmp(after, threshold) >= 0 then plan.crosses = true end
      end
    end
    pre[i] = used
    allowed = allowed and ok
    pos = pos + 7 + nFields + nThresholds
  else
    local rate = tonumber(ARGV[pos + 4])
    local state = redis.call('HMGET', key, 'micro', 'ms')
    local full = limit .. '000000'
    local current, updated = full, now
    if state[1] then
      local previousMs = tonumber(state[2])
      local earned = math.floor(math.max(0, now - previousMs) * rate * 1000)
      local refill = (earned == earned and earned < tonumber(full)) and int(earned) or full
      current = min(full, add(state[1], refill))
      updated = math.max(now, previousMs)
      pre[i] = state[1] .. ' ' .. state[2]
    else
      pre[i] = ''
    end
    local need = requested == '0' and '0' or (requested .. '000000')
    local fits = cmp(current, need) >= 0
    local ok = fits or over
    plan.micro = fits and add(current, '-' .. need) or (ok and '0' or current)
    plan.ms = int(updated)
    local fullInMs = math.ceil(tonumber(add(full, '-' .. plan.micro)) / (rate * 1000))
    plan.expireAt = fullInMs <= ${BUCKET_EXPIRY_MAX_MS} and int(updated + fullInMs + 1) or 'none'
    allowed = allowed and ok
    pos = pos + 5
  end
  plans[i] = plan
end

if allowed then
  for i = 1, n do
    if plans[i].crosses then return { 4 } end
  end
  for i = 1, n do
    local plan = plans[i]
    if plan.kind == 'q' then
      local keep = { v = true }
      for _, field in ipairs(plan.fields) do keep[field] = true end
      for _, field in ipairs(redis.call('HKEYS', plan.key)) do
        if not keep[field] then redis.call('HDEL', plan.key, field) end
      end
      redis.call('HSET', plan.key, plan.fields[#plan.fields], plan.current, 'v', token)
    else
      redis.call('HSET', plan.key, 'micro', plan.micro, 'ms', plan.ms, 'v', token)
    end
    if plan.expireAt == 'none' then redis.call('PERSIST', plan.key)
    else redis.call('PEXPIREAT', plan.key, plan.expireAt) end
  end
  if ARGV[9] ~= '' then redis.call('XADD', stream, '*', 'e', ARGV[9]) end
end
if hasIdem then
  redis.call('SET', idemKey, ARGV[7] .. '\\n' .. table.concat(pre, '\\n'), 'EX', ARGV[8])
end
local reply = { 1, allowed and 1 or 0 }
for i = 1, n do reply[2 + i] = pre[i] end
return reply`;

function policyArgs(policy: FastPolicyInput): string[] {
  const head = [
    policy.kind === 'quota' ? 'q' : 'b',
    policy.requested.toString(),
    (policy.kind === 'quota' ? policy.limit : policy.capacity).toString(),
    policy.allowOverage ? '1' : '0',
  ];
  if (policy.kind === 'bucket') return [...head, String(policy.ratePerSec)];
  return [
    ...head,
    String(policy.fields.length),
    policy.expireAtMs === null ? 'none' : String(policy.expireAtMs),
    String(policy.thresholds.length),
    ...policy.fields,
    ...policy.thresholds.map(String),
  ];
}

function preStateOf(kind: FastPolicyInput['kind'], value: string): FastPreState {
  if (kind === 'quota') return { used: BigInt(value) };
  if (value === '') return null;
  const [micro, ms] = value.split(' ');
  return { micro: BigInt(micro!), updatedMs: Number(ms) };
}

/** The state a recorded decision was made from, as `decideFastStates` recorded it. */
export function recordedPreStates(
  kinds: FastPolicyInput['kind'][],
  lines: string[],
): FastPreState[] {
  return kinds.map((kind, i) => preStateOf(kind, lines[i]!));
}

export async function decideFastStates(
  redis: Redis,
  input: FastDecisionInput,
): Promise<FastDecisionReply> {
  const decide = redisKeysScript(redis, 'quotaFastDecide', DECIDE_SCRIPT, { durable: true });
  const idem = input.idempotency;
  const keys = [
    ...input.guard.keys,
    ...input.policies.map((p) => p.key),
    ledgerStreamKey(input.partition),
    ...(idem ? [idem.key] : []),
  ];
  const args = [
    String(input.policies.length),
    input.token,
    String(input.nowMs),
    ...input.guard.expected,
    idem ? '1' : '0',
    idem?.recordPrefix ?? '',
    String(idem?.ttlSeconds ?? 0),
    input.ledger,
    ...input.policies.flatMap(policyArgs),
  ];
  const reply = (await decide(keys.length, ...keys, ...args)) as [number, ...unknown[]];
  switch (reply[0]) {
    case 2:
      return { status: 'generation-moved' };
    case 3:
      return { status: 'recorded', record: reply[1] as string };
    case 4:
      return { status: 'crossing' };
    default:
      return {
        status: 'decided',
        allowed: reply[1] === 1,
        pre: input.policies.map((p, i) => preStateOf(p.kind, reply[2 + i] as string)),
      };
  }
}
