import type { DatabasePool } from '../../db/pool';
import { recordLastUse } from '../../db/quota/keys';
import type { Logger } from '../../platform/logger';

/** How often a process writes its keys' last use: last_used_at is at most this late. */
export const LAST_USE_FLUSH_MS = 10_000;

/**
 * `last_used_at` without a write per request: each process remembers the latest use of each key
 * and writes them all in one statement every LAST_USE_FLUSH_MS (and when it stops). A crash
 * loses at most that interval's uses.
 */
export function createLastUseRecorder(deps: { pool: DatabasePool; logger: Logger }) {
  let uses = new Map<string, Date>();
  let timer: NodeJS.Timeout | undefined;

  async function flush(): Promise<void> {
    if (uses.size === 0) return;
    const batch = uses;
    uses = new Map();
    try {
      await recordLastUse(deps.pool, batch);
    } catch (error) {
      deps.logger.warn({ err: (error as Error).message }, 'last_used_at not written; retried');
      for (const [key, at] of batch) if (!uses.has(key)) uses.set(key, at);
    }
  }

  return {
    used(keyRowId: string): void {
      uses.set(keyRowId, new Date());
    },
    flush,
    start(): void {
      timer = setInterval(() => void flush(), LAST_USE_FLUSH_MS);
      timer.unref();
    },
    async stop(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}
export type LastUseRecorder = ReturnType<typeof createLastUseRecorder>;
