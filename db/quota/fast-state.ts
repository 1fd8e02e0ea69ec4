import { redisKeysScript as script, type Redis } from '../redis';
import { ALL_PARTITIONS, ledgerStreamKey } from './partitions';

/**
 * Fast-mode state in Redis. Each (tenant, policy, subject) has one hash: a quota policy's usage
 * per window (`w:<window key>`, a rolling window's buckets as fields), or a rate limit's bucket
 * (`micro`, `ms`), and `v`, a token every write replaces. A decision reads the hashes, decides in
 * TypeScript with the same exact arithmetic as strict mode, and commits with one script that
 * writes only if every `v` is still what it read (else the caller reads and decides again): the
 * decision is atomic without a lock, and over-admits nothing. The same script appends the
 * decision's ledger entries to a stream (write-ahead: an admitted request is in Redis's
 * append-only file before it is answered) and records an idempotency key's answer.
 */
export interface FastState {
  /** The write token read; '' when the hash does not exist. */
  version: string;
  fields: Map<string, string>;
}

export interface FastWrite {
  key: string;
  /** The version the decision read: the write happens only if it is unchanged. */
  expectedVersion: string;
  set: Record<string, string>;
  /** Fields to keep (others are deleted, `v` aside); null keeps every field. */
  keep: string[] | null;
  /** Epoch ms the hash expires at; null: never; 'keep': as it is. */
  expireAtMs: number | null | 'keep';
}

export interface FastCommitExtras {
  /** Ledger entries (JSON) appended to the stream in the same step. */
  ledger?: string;
  /** The request's alert crossings (JSON), in the same stream entry as its ledger entries. */
  alerts?: string;
  /** An idempotency key's answer, recorded only if the key has none yet. */
  idempotency?: { key: string; answer: string; ttlSeconds: number };
}

const READ_SCRIPT = `
local n, hasIdem, g = tonumber(ARGV[1]), ARGV[2] == '1', tonumber(ARGV[3])
local out = {}
for i = 1, n do out[i] = redis.call('HGETALL', KEYS[i]) end
local k = n
if hasIdem then k = k + 1; out[k] = redis.call('GET', KEYS[k]) or false end
for i = 1, g do out[k + i] = redis.call('GET', KEYS[k + i]) or '0' end
return out`;

// Answers 1 when written; 0 when a state's version moved or the idempotency key was answered
// meanwhile; 2 when a generation moved (the request is judged again from a fresh catalogue).
const COMMIT_SCRIPT = `
local n = tonumber(ARGV[1])
local hasStream = ARGV[2] == '1'
local hasIdem = ARGV[3] == '1'
local token = ARGV[4]
local g = tonumber(ARGV[5])
local idemKey = KEYS[n + (hasStream and 2 or 1)]
local genAt = n + (hasStream and 1 or 0) + (hasIdem and 1 or 0)
local pos = 6
local plans = {}
for i = 1, n do
  local expected, expireAt, nSet = ARGV[pos], ARGV[pos + 1], tonumber(ARGV[pos + 2])
  local setAt = pos + 3
  pos = setAt + 2 * nSet
  local nKeep = tonumber(ARGV[pos])
  local keepAt = pos + 1
  if nKeep > 0 then pos = keepAt + nKeep else pos = keepAt end
  plans[i] = { expected, expireAt, setAt, nSet, keepAt, nKeep }
end
for i = 1, g do
  if (redis.call('GET', KEYS[genAt + i]) or '0') ~= ARGV[pos + 3 + i] then return 2 end
end
if hasIdem and redis.call('EXISTS', idemKey) == 1 then return 0 end
for i = 1, n do
  if (redis.call('HGET', KEYS[i], 'v') or '') ~= plans[i][1] then return 0 end
end
for i = 1, n do
  local _, expireAt, setAt, nSet, keepAt, nKeep = unpack(plans[i])
  if nKeep >= 0 then
    local keep = { v = true }
    for j = 0, nKeep - 1 do keep[ARGV[keepAt + j]] = true end
    for _, field in ipairs(redis.call('HKEYS', KEYS[i])) do
      if not keep[field] then redis.call('HDEL', KEYS[i], field) end
    end
  end
  for j = 0, nSet - 1 do redis.call('HSET', KEYS[i], ARGV[setAt + 2 * j], ARGV[setAt + 2 * j + 1]) end
  redis.call('HSET', KEYS[i], 'v', token)
  if expireAt == 'none' then redis.call('PERSIST', KEYS[i])
  elseif expireAt ~= 'keep' then redis.call('PEXPIREAT', KEYS[i], expireAt) end
end
if hasStream then
  if ARGV[pos + 3] ~= '' then redis.call('XADD', KEYS[n + 1], '*', 'e', ARGV[pos], 'a', ARGV[pos + 3])
  else redis.call('XADD', KEYS[n + 1], '*', 'e', ARGV[pos]) end
end
if hasIdem then redis.call('SET', idemKey, ARGV[pos + 1], 'EX', ARGV[pos + 2]) end
return 1`;

const pairsToMap = (flat: string[]) => {
  const fields = new Map<string, string>();
  for (let i = 0; i < flat.length; i += 2) fields.set(flat[i]!, flat[i + 1]!);
  return fields;
};

/** Redis's copies of a request's catalogue generations, and the values it was judged at. */
export interface GenerationGuard {
  keys: string[];
  expected: string[];
}

/**
 * The hashes of `keys`, an idempotency key's recorded answer when one is named, and the
 * generations a guard names as Redis holds them.
 */
export async function readFastStates(
  redis: Redis,
  keys: string[],
  idempotencyKey?: string,
  guard?: GenerationGuard,
): Promise<{ states: FastState[]; recorded: string | null; generations: string[] }> {
  const read = script(redis, 'quotaFastRead', READ_SCRIPT);
  const generationKeys = guard?.keys ?? [];
  const allKeys = [...keys, ...(idempotencyKey ? [idempotencyKey] : []), ...generationKeys];
  const reply = (await read(
    allKeys.length,
    ...allKeys,
    String(keys.length),
    idempotencyKey ? '1' : '0',
    String(generationKeys.length),
  )) as unknown[];
  const states = keys.map((_, i) => {
    const fields = pairsToMap(reply[i] as string[]);
    const version = fields.get('v') ?? '';
    fields.delete('v');
    return { version, fields };
  });
  const recorded = idempotencyKey ? ((reply[keys.length] as string | null) ?? null) : null;
  const generations = reply.slice(allKeys.length - generationKeys.length) as string[];
  return { states, recorded, generations };
}

export type FastCommit = 'committed' | 'state-moved' | 'generation-moved';
const COMMIT_REPLIES: Record<number, FastCommit> = {
  0: 'state-moved',
  1: 'committed',
  2: 'generation-moved',
};

/**
 * Writes every hash whose version is unchanged, with the extras, in one atomic step, if the
 * guard's generations are still current; nothing is written otherwise.
 */
export async function commitFastStates(
  redis: Redis,
  /** The subject's partition (db/quota/partitions.ts): every key here is in it. */
  partition: number,
  writes: FastWrite[],
  token: string,
  extras: FastCommitExtras = {},
  guard?: GenerationGuard,
): Promise<FastCommit> {
  const commit = script(redis, 'quotaFastCommit', COMMIT_SCRIPT, { durable: true });
  const keys = writes.map((w) => w.key);
  if (extras.ledger !== undefined) keys.push(ledgerStreamKey(partition));
  if (extras.idempotency) keys.push(extras.idempotency.key);
  keys.push(...(guard?.keys ?? []));
  const args = [
    String(writes.length),
    extras.ledger !== undefined ? '1' : '0',
    extras.idempotency ? '1' : '0',
    token,
    String(guard?.keys.length ?? 0),
  ];
  for (const write of writes) {
    const set = Object.entries(write.set);
    args.push(
      write.expectedVersion,
      write.expireAtMs === null ? 'none' : String(write.expireAtMs),
      String(set.length),
      ...set.flat(),
      String(write.keep === null ? -1 : write.keep.length),
      ...(write.keep ?? []),
    );
  }
  const idem = extras.idempotency;
  args.push(
    extras.ledger ?? '',
    idem?.answer ?? '',
    String(idem?.ttlSeconds ?? 0),
    extras.alerts ?? '',
    ...(guard?.expected ?? []),
  );
  return COMMIT_REPLIES[(await commit(keys.length, ...keys, ...args)) as number]!;
}

/**
 * Notes `hash` as the body an idempotency key was first used with, for IDEMPOTENCY's window;
 * answers the first body's hash (`hash` itself when this is the first use).
 */
export async function claimIdempotencyBody(
  redis: Redis,
  key: string,
  hash: string,
  ttlSeconds: number,
): Promise<string> {
  const claim = script(redis, 'quotaClaimIdempotencyBody', CLAIM_SCRIPT, { durable: true });
  const first = (await claim(1, key, hash, String(ttlSeconds))) as string | null;
  return first ?? hash;
}

const CLAIM_SCRIPT = `return redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2], 'NX', 'GET')`;

/** The oldest entries of a partition's ledger stream, with their ids (and alert crossings, if any). */
export async function readLedgerStream(
  redis: Redis,
  partition: number,
  count: number,
): Promise<{ id: string; entries: string; alerts: string | null }[]> {
  const rows = await redis.xrange(ledgerStreamKey(partition), '-', '+', 'COUNT', count);
  return rows.map(([id, fields]) => {
    const named = pairsToMap(fields);
    return { id, entries: named.get('e')!, alerts: named.get('a') ?? null };
  });
}

export async function deleteFromLedgerStream(
  redis: Redis,
  partition: number,
  ids: string[],
): Promise<void> {
  if (ids.length > 0) await redis.xdel(ledgerStreamKey(partition), ...ids);
}

/** When the oldest entry not yet flushed, of any partition, was appended (epoch ms); null: none waits. */
export async function oldestUnflushedMs(redis: Redis): Promise<number | null> {
  const firsts = await Promise.all(
    ALL_PARTITIONS.map((p) => redis.xrange(ledgerStreamKey(p), '-', '+', 'COUNT', 1)),
  );
  const times = firsts.flatMap(([first]) => (first ? [Number(first[0].split('-')[0])] : []));
  return times.length === 0 ? null : Math.min(...times);
}
