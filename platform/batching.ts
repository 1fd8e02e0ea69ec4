/**
 * Natural batching ("group commit" in the API process): requests that arrive while a batch of
 * their partition is in flight wait and go together in the next call; an idle partition sends at
 * once. The only wait is setImmediate: what arrives in the same turn of the event loop (the
 * requests one Postgres or Redis reply releases) is gathered, and a lone request is not delayed
 * by a timer.
 *
 * Failure isolation: when a batch of more than one fails as a whole, each of its items is run
 * alone (runOne), so one item's unexpected error (numeric overflow, a duplicate external_id, a
 * lock timeout) reaches only that item, and the others still succeed. A batch of one is always
 * run alone: the lone path is the path of before.
 */
export interface BatcherOptions<In, Out> {
  /** At most this many items per call. */
  sizeMax: number;
  /** At most this many calls of one partition in flight at once (later items queue). */
  flightsMax: number;
  runBatch(partition: string, items: In[]): Promise<Out[]>;
  runOne(partition: string, item: In): Promise<Out>;
  /** Told of every call when it ends, whatever its outcome (metrics). */
  onFlight?(partition: string, flight: BatchFlight): void;
}

/** One call of a partition: how many items, how long the oldest waited for it, how long it took. */
export interface BatchFlight {
  size: number;
  waitedMs: number;
  flightMs: number;
}

interface Waiter<In, Out> {
  item: In;
  queuedAt: number;
  resolve(value: Out): void;
  reject(error: unknown): void;
}

interface Partition<In, Out> {
  queue: Waiter<In, Out>[];
  flights: number;
  scheduled: boolean;
}

export class NaturalBatcher<In, Out> {
  private readonly partitions = new Map<string, Partition<In, Out>>();
  /** Items submitted and not yet answered, of every partition (drain). */
  private unanswered = 0;
  private readonly drainWaiters: (() => void)[] = [];

  constructor(private readonly options: BatcherOptions<In, Out>) {
    if (options.sizeMax < 1 || options.flightsMax < 1)
      throw new Error('batch size and flights must be at least 1');
  }

  submit(partition: string, item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      let p = this.partitions.get(partition);
      if (!p) {
        p = { queue: [], flights: 0, scheduled: false };
        this.partitions.set(partition, p);
      }
      p.queue.push({ item, queuedAt: performance.now(), resolve, reject });
      this.unanswered++;
      this.schedule(partition, p);
    });
  }

  /**
   * Resolves when every item submitted so far (and any submitted meanwhile) has its answer: what
   * its owner awaits when it stops, so no call is left in flight behind it.
   */
  drain(): Promise<void> {
    if (this.unanswered === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private schedule(name: string, p: Partition<In, Out>): void {
    if (p.scheduled || p.flights >= this.options.flightsMax) return;
    p.scheduled = true;
    setImmediate(() => {
      p.scheduled = false;
      this.pump(name, p);
    });
  }

  private pump(name: string, p: Partition<In, Out>): void {
    while (p.flights < this.options.flightsMax && p.queue.length > 0) {
      const batch = p.queue.splice(0, this.options.sizeMax);
      p.flights++;
      void this.fly(name, batch).finally(() => {
        p.flights--;
        if (p.queue.length > 0) this.pump(name, p);
        else if (p.flights === 0 && !p.scheduled) this.partitions.delete(name);
      });
    }
  }

  private async fly(name: string, batch: Waiter<In, Out>[]): Promise<void> {
    const started = performance.now();
    try {
      await this.run(name, batch);
    } finally {
      try {
        this.options.onFlight?.(name, {
          size: batch.length,
          waitedMs: started - batch[0]!.queuedAt,
          flightMs: performance.now() - started,
        });
      } catch {
        // An observer's fault never reaches the items, which have their answers.
      }
      // run() has answered every item of the batch, whatever the batch's outcome.
      this.unanswered -= batch.length;
      if (this.unanswered === 0) for (const drained of this.drainWaiters.splice(0)) drained();
    }
  }

  private async run(name: string, batch: Waiter<In, Out>[]): Promise<void> {
    if (batch.length > 1) {
      let results: Out[] | undefined;
      try {
        results = await this.options.runBatch(
          name,
          batch.map((w) => w.item),
        );
      } catch {
        // Isolated below: each item alone gets its own result or its own error.
      }
      if (results) {
        batch.forEach((w, i) => w.resolve(results[i]!));
        return;
      }
    }
    await Promise.all(
      batch.map((w) =>
        this.options.runOne(name, w.item).then(
          (value) => w.resolve(value),
          (error: unknown) => w.reject(error),
        ),
      ),
    );
  }
}

/**
 * A batcher whose call needs only how many items of a partition came (a token bucket, a counter):
 * one call in flight per partition, `run` answers each of the `count` items in arrival order.
 */
export function countingBatcher<Out>(
  sizeMax: number,
  run: (partition: string, count: number) => Promise<Out[]>,
): NaturalBatcher<null, Out> {
  return new NaturalBatcher<null, Out>({
    sizeMax,
    flightsMax: 1,
    runBatch: (partition, items) => run(partition, items.length),
    runOne: async (partition) => (await run(partition, 1))[0]!,
  });
}
