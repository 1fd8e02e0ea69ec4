import type { Context } from 'koa';
import { ledgerError } from './errors';
import { sql, type DatabasePool } from '../../db/pool';
import { redisScript, type Redis } from '../../db/redis';
import { withSystem } from '../../db/ledger/context';
import type { Logger } from '../../platform/logger';
import type { Principal } from './credentials';
import { countingBatcher } from '../../platform/batching';

/** A month's counter outlives its month by this much, for late reconciliation reads. */
const COUNTER_TTL_SECONDS = 40 * 24 * 3600;

/** INCRBY and EXPIRE of a month's counter as one script: one command, one reply. */
const COUNT_CALLS_LUA = `
local calls = redis.call('INCRBY', KEYS[1], tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
return calls
`;

/** Calls of one root tenant per counter call at most. */
const METER_BATCH_SIZE_MAX = 256;

export const monthOf = (date: Date): string => date.toISOString().slice(0, 7);

function secondsToNextMonth(now: Date): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/** A counted call, for a caller that learns afterwards that the call was not an authenticated one. */
export interface MeteredCall {
  uncount(): Promise<void>;
}

/** A call recorded in Postgres while Redis was unreachable stays recorded (reconciliation). */
const UNCOUNTABLE: MeteredCall = { uncount: () => Promise.resolve() };

/**
 * Monthly call quota per root tenant (a sub-tenant's calls count against its root). Redis
 * holds the counter; when it cannot answer, the call is served and recorded in Postgres
 * (ledger.unmetered_calls) for reconciliation.
 */
export function monthlyCallMeter(deps: {
  redis: Redis;
  pool: DatabasePool;
  logger: Logger;
  monthlyCallQuota: number;
}) {
  const countCalls = redisScript<number>(deps.redis, 'ledgerCountCalls', COUNT_CALLS_LUA);
  // Calls of one tenant and month that arrive while its last counter call is out are counted
  // together in the next: one INCRBY per batch, each call given its own place in the count.
  const count = async (counterKey: string, calls: number): Promise<number[]> => {
    const total = await countCalls(counterKey, COUNTER_TTL_SECONDS, calls);
    return Array.from({ length: calls }, (_, i) => total - calls + 1 + i);
  };
  const batcher = countingBatcher(METER_BATCH_SIZE_MAX, count);
  return async function meter(principal: Principal, _ctx: Context): Promise<MeteredCall> {
    const now = new Date();
    const month = monthOf(now);
    const counterKey = `calls:${principal.rootTenantId}:${month}`;
    let calls: number;
    try {
      calls = await batcher.submit(counterKey, null);
    } catch (error) {
      deps.logger.warn(
        { err: (error as Error).message, tenantId: principal.rootTenantId },
        'metering unreachable; call served unmetered',
      );
      await withSystem(deps.pool, (tx) =>
        tx.query(
          sql.unsafe`INSERT INTO ledger.unmetered_calls (tenant_id, month) VALUES (${principal.rootTenantId}, ${month})`,
        ),
      ).catch((dbError: unknown) =>
        deps.logger.error({ err: dbError }, 'unmetered call not recorded'),
      );
      return UNCOUNTABLE;
    }
    if (calls > deps.monthlyCallQuota) {
      throw ledgerError('QUOTA_EXCEEDED', {
        message: `monthly call quota of ${deps.monthlyCallQuota} reached`,
        retryAfterSeconds: secondsToNextMonth(now),
      });
    }
    return {
      uncount: async () => {
        await countCalls(counterKey, COUNTER_TTL_SECONDS, -1);
      },
    };
  };
}
