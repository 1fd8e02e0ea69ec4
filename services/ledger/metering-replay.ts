import { ulid } from 'ulid';
import type { DatabasePool } from '../../db/pool';
import { withSystem } from '../../db/ledger/context';
import {
  deleteReplayBatch,
  findMarkedReplayBatch,
  markReplayBatch,
} from '../../db/ledger/metering-replay';
import type { Logger } from '../../platform/logger';
import type { MeteringConfig } from '../../platform/config';
import { createQuotaClient } from '../../platform/quota-client/client';
import { QuotaUnavailable, quotaAnswer } from '../../platform/quota-client/answers';
import { LEDGER_CALLS, callsSubject } from './metering';

/** Calls of one root tenant replayed by one consume at most. */
const REPLAY_BATCH_MAX = 1000;
/** How often each API process looks for calls served while the quota service did not answer. */
export const REPLAY_INTERVAL_MS = 5_000;

/**
 * Replays the calls served unmetered (ledger.unmetered_calls) into the quota service, each once:
 * a batch of one root tenant's calls is first marked with the idempotency key it is consumed
 * under, then consumed (their count, in the month the quota service is in now), then deleted. A
 * replay cut short between the consume and the delete sends the same key and count again, and
 * the quota service answers it as the first (it keeps a key 24 hours). Several processes may
 * replay at once: a batch they both found is still consumed once. Returns the calls replayed;
 * stops at the first batch the quota service does not take (it is tried again next time).
 */
export async function replayUnmeteredCalls(deps: {
  pool: DatabasePool;
  metering: MeteringConfig;
}): Promise<number> {
  const quota = createQuotaClient({
    baseUrl: deps.metering.quotaUrl,
    apiKey: deps.metering.apiKey,
  });
  let replayed = 0;
  for (;;) {
    const batch =
      (await withSystem(deps.pool, findMarkedReplayBatch)) ??
      (await withSystem(deps.pool, (tx) =>
        markReplayBatch(tx, `ledger:unmetered:${ulid()}`, REPLAY_BATCH_MAX),
      ));
    if (batch === null) return replayed;
    await quotaAnswer('replay', () =>
      quota.POST('/v1/consume', {
        body: {
          subject: callsSubject(batch.tenantId),
          items: [{ resource: LEDGER_CALLS, amount: batch.calls }],
          idempotency_key: batch.replayKey,
          metadata: { replayed_unmetered_calls: batch.calls, served_in: batch.month },
        },
      }),
    );
    await withSystem(deps.pool, (tx) => deleteReplayBatch(tx, batch.replayKey));
    replayed += batch.calls;
  }
}

/**
 * The replay of every API process with metering on, every REPLAY_INTERVAL_MS: an empty table
 * costs one index probe. A quota service still not answering is logged once per pass.
 */
export function startUnmeteredReplay(deps: {
  pool: DatabasePool;
  metering: MeteringConfig;
  logger: Logger;
}): NodeJS.Timeout {
  let replaying = false;
  const timer = setInterval(() => {
    if (replaying) return;
    replaying = true;
    replayUnmeteredCalls(deps)
      .then((calls) => {
        if (calls > 0)
          deps.logger.info({ calls }, 'unmetered calls replayed into the quota service');
      })
      .catch((error: unknown) => {
        if (error instanceof QuotaUnavailable)
          deps.logger.warn({ err: error.message }, 'unmetered calls not replayed yet');
        else deps.logger.error({ err: error }, 'unmetered calls replay failed');
      })
      .finally(() => {
        replaying = false;
      });
  }, REPLAY_INTERVAL_MS);
  timer.unref();
  return timer;
}
