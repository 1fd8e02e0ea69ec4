import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Logger } from './logger';

/** The workflow one outbox row starts. */
export interface WorkflowStart {
  workflowType: string;
  options: WorkflowStartOptions;
}

/**
 * One kind of outbox row: a committed row that asks for a workflow (a ledger hold to expire; a
 * run, a DAG, a timer or a webhook delivery of the runs service; a quota tenant's bootstrap, an
 * alert's webhook delivery or mail). The dispatcher needs only these four answers.
 */
export interface OutboxSource<Row> {
  /** In logs: `ledger holds`, `run starts`. */
  name: string;
  /** The row's id, unique in the source. */
  keyOf(row: Row): string;
  /**
   * Rows whose start is due: never confirmed, and past whatever grace or backoff the source
   * keeps (its SQL decides), at most `limit`, none of `skip` (queued or in flight here).
   */
  due(limit: number, skip: string[]): Promise<Row[]>;
  /**
   * The workflow to start, or null when the row needs none any more (it is confirmed as is).
   * May look something up first (a hold's legs for its summary): off the request path, and a
   * failure is a failed start (retried).
   */
  workflowOf(row: Row): WorkflowStart | null | Promise<WorkflowStart | null>;
  /** Records these rows' workflows as started, in one statement. */
  markStarted(keys: string[]): Promise<void>;
}

export interface OutboxLimits {
  /** How often the sweeper asks the source for due rows. */
  sweepIntervalMs: number;
  sweepBatchMax: number;
  /**
   * Starts in flight per process. Temporal takes starts at its own pace (the local dev server:
   * ~50/s, one after another); more parallel calls only make each slower and burn CPU.
   */
  startConcurrency: number;
  /** Past this many waiting starts, new ones are left to the sweeper (the row has what it needs). */
  queueMax: number;
  /** Longest one start may take (the client's retries included) before the sweeper takes over. */
  startDeadlineMs: number;
  /** Confirmed starts are recorded in one statement this often. */
  confirmFlushMs: number;
  /** How long stop() waits for starts in flight (the next process's sweeper covers the rest). */
  stopDrainMaxMs: number;
  /** A row whose start failed waits this long before its next try here, doubling each time... */
  retryDelayMinMs: number;
  /** ...up to this. */
  retryDelayMaxMs: number;
  /** Failed rows whose delay this process remembers (the oldest is forgotten first). */
  retryKeysMax: number;
}

export const OUTBOX_LIMITS_DEFAULT: OutboxLimits = {
  sweepIntervalMs: 2_000,
  sweepBatchMax: 100,
  startConcurrency: 8,
  queueMax: 5_000,
  startDeadlineMs: 5_000,
  confirmFlushMs: 200,
  stopDrainMaxMs: 10_000,
  retryDelayMinMs: 1_000,
  retryDelayMaxMs: 60_000,
  retryKeysMax: 5_000,
};

export type OutboxDispatcher<Row> = ReturnType<typeof createOutboxDispatcher<Row>>;

/**
 * Starts the workflows that committed outbox rows ask for, off the request path and at least
 * once: a request enqueues its row after its transaction commits; a bounded queue starts the
 * workflows (a workflow id is started once, ever: a second start is Temporal's "already
 * started", counted as done) and records confirmed ones in batches; a sweeper, in every process,
 * starts whatever was never confirmed (the process died after the commit, Temporal was
 * unreachable, the queue was full). A row whose start failed is left alone here for a delay
 * that doubles with each failure (a source may keep its own backoff in SQL as well).
 */
export function createOutboxDispatcher<Row>(
  deps: { temporal: Client; logger: Logger },
  source: OutboxSource<Row>,
  overrides: Partial<OutboxLimits> = {},
) {
  const limits = { ...OUTBOX_LIMITS_DEFAULT, ...overrides };
  const queue: Row[] = [];
  /** Keys queued or in flight here: the sweeper leaves them alone. */
  const pending = new Set<string>();
  const inFlight = new Set<Promise<void>>();
  const confirmations = batchedConfirmations(source, deps.logger, limits.confirmFlushMs);
  const retries = retryDelays(limits);
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> | null = null;
  let stopped = false;

  const startOne = async (row: Row): Promise<void> => {
    const key = source.keyOf(row);
    try {
      const start = await source.workflowOf(row);
      if (start !== null)
        // A bounded call: an unreachable Temporal must not leave retries running past stop().
        await deps.temporal.withDeadline(Date.now() + limits.startDeadlineMs, () =>
          deps.temporal.workflow.start(start.workflowType, {
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
            ...start.options,
          }),
        );
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) {
        const retryInMs = retries.failed(key, Date.now());
        // The client's message is generic ("Failed to start workflow"); its cause says why.
        const { message, cause } = error as Error;
        deps.logger.warn(
          { key, err: message, cause: cause instanceof Error ? cause.message : cause, retryInMs },
          `${source.name}: workflow not started yet; the sweeper retries`,
        );
        return;
      }
    }
    retries.started(key);
    confirmations.add(key);
  };

  const pump = () => {
    while (!stopped && inFlight.size < limits.startConcurrency && queue.length > 0) {
      const row = queue.shift()!;
      const started: Promise<void> = startOne(row)
        .catch(() => undefined)
        .then(() => {
          pending.delete(source.keyOf(row));
          inFlight.delete(started);
          pump();
        });
      inFlight.add(started);
    }
  };

  const enqueue = (row: Row): void => {
    const key = source.keyOf(row);
    if (stopped || pending.has(key) || queue.length >= limits.queueMax) return;
    if (retries.waiting(key, Date.now())) return;
    pending.add(key);
    queue.push(row);
    pump();
  };

  const sweepOnce = async () => {
    try {
      const skip = [...pending, ...retries.waitingKeys(Date.now())];
      for (const row of await source.due(limits.sweepBatchMax, skip)) enqueue(row);
    } catch (error) {
      deps.logger.warn({ err: (error as Error).message }, `${source.name}: outbox sweep failed`);
    }
  };

  const sweep = (): Promise<void> => {
    sweeping ??= sweepOnce().finally(() => {
      sweeping = null;
    });
    return sweeping;
  };

  return {
    /** After the row's transaction committed: its workflow starts without the request waiting. */
    enqueue,
    /** One look for due rows (the sweeper's tick; tests call it to not wait for one). */
    sweep,
    start(): void {
      sweepTimer = setInterval(() => void sweep(), limits.sweepIntervalMs);
      sweepTimer.unref();
    },
    /** Lets the starts in flight finish (boundedly) and records them; the queue is left. */
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(sweepTimer);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight, sweeping]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, limits.stopDrainMaxMs);
        }),
      ]);
      clearTimeout(timer);
      await confirmations.flush();
    },
  };
}

/** Confirmed keys, recorded by the source in one statement per flush, one flush at a time. */
function batchedConfirmations<Row>(source: OutboxSource<Row>, logger: Logger, flushMs: number) {
  let keys: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    const batch = keys;
    keys = [];
    if (batch.length === 0) return flushing;
    flushing = flushing.then(() =>
      source.markStarted(batch).catch((error: unknown) =>
        // Not fatal: the sweeper starts them again and Temporal answers "already started".
        logger.warn({ err: (error as Error).message }, `${source.name}: starts not recorded`),
      ),
    );
    return flushing;
  };
  return {
    flush,
    add(key: string): void {
      keys.push(key);
      timer ??= setTimeout(() => void flush(), flushMs);
    },
  };
}

/**
 * Rows whose start failed in this process, each with the time of its next try: the delay doubles
 * with every failure up to a maximum, and a start clears it. Bounded: past `retryKeysMax` the
 * oldest is forgotten, and so is one long past its time (another process started its row).
 */
function retryDelays(
  limits: Pick<OutboxLimits, 'retryDelayMinMs' | 'retryDelayMaxMs' | 'retryKeysMax'>,
) {
  const failures = new Map<string, { count: number; retryAtMs: number }>();
  return {
    /** Records one more failure; answers the delay before the next try. */
    failed(key: string, nowMs: number): number {
      const count = (failures.get(key)?.count ?? 0) + 1;
      const delayMs = Math.min(
        limits.retryDelayMaxMs,
        limits.retryDelayMinMs * 2 ** Math.min(count - 1, 30),
      );
      failures.delete(key); // inserted again last: the Map's order is oldest failure first
      failures.set(key, { count, retryAtMs: nowMs + delayMs });
      if (failures.size > limits.retryKeysMax) failures.delete(failures.keys().next().value!);
      return delayMs;
    },
    started(key: string): void {
      failures.delete(key);
    },
    waiting(key: string, nowMs: number): boolean {
      return (failures.get(key)?.retryAtMs ?? 0) > nowMs;
    },
    /** Keys still waiting out their delay (the sweep skips them). */
    waitingKeys(nowMs: number): string[] {
      const keys: string[] = [];
      for (const [key, { retryAtMs }] of failures) {
        if (retryAtMs > nowMs) keys.push(key);
        else if (retryAtMs < nowMs - limits.retryDelayMaxMs) failures.delete(key);
      }
      return keys;
    },
  };
}
