import { NaturalBatcher, type BatchFlight } from '../../../platform/batching';

/** A batcher whose calls are recorded and answered when the test says so. */
function harness(options: { sizeMax?: number; flightsMax?: number } = {}) {
  const calls: { kind: 'batch' | 'one'; partition: string; items: number[]; done(): void }[] = [];
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  const batcher = new NaturalBatcher<number, string>({
    sizeMax: options.sizeMax ?? 64,
    flightsMax: options.flightsMax ?? 1,
    runBatch: (partition, items) =>
      new Promise((resolve, reject) => {
        calls.push({
          kind: 'batch',
          partition,
          items,
          done: () =>
            items.includes(13)
              ? reject(new Error('one item broke the batch'))
              : resolve(items.map((i) => `${partition}:${i}`)),
        });
      }),
    runOne: (partition, item) =>
      new Promise((resolve, reject) => {
        calls.push({
          kind: 'one',
          partition,
          items: [item],
          done: () =>
            item === 13 ? reject(new Error('13 alone')) : resolve(`${partition}:${item}`),
        });
      }),
  });
  return { batcher, calls, settle };
}

describe('NaturalBatcher (group commit in the API process)', () => {
  it('when a request comes to an idle partition, then it goes at once, alone, on the lone path', async () => {
    const { batcher, calls, settle } = harness();
    const reply = batcher.submit('t1', 1);
    await settle();
    expect(calls.map((c) => [c.kind, c.items])).toEqual([['one', [1]]]);
    calls[0]!.done();
    await expect(reply).resolves.toBe('t1:1');
  });

  it('when requests come while a call is in flight, then they wait and go together in the next call, at most sizeMax at a time, each getting its own result', async () => {
    const { batcher, calls, settle } = harness({ sizeMax: 3 });
    const first = batcher.submit('t1', 1);
    await settle();
    const later = [2, 3, 4, 5].map((i) => batcher.submit('t1', i));
    await settle();
    expect(calls).toHaveLength(1);
    calls[0]!.done();
    await first;
    await settle();
    expect(calls.map((c) => [c.kind, c.items])).toEqual([
      ['one', [1]],
      ['batch', [2, 3, 4]],
    ]);
    calls[1]!.done();
    await settle();
    expect(calls[2]!.items).toEqual([5]);
    calls[2]!.done();
    await expect(Promise.all(later)).resolves.toEqual(['t1:2', 't1:3', 't1:4', 't1:5']);
  });

  it('when two partitions (tenants) are busy, then each batches on its own and their items never share a call', async () => {
    const { batcher, calls, settle } = harness();
    const replies = [batcher.submit('a', 1), batcher.submit('b', 2), batcher.submit('a', 3)];
    await settle();
    expect(calls.map((c) => [c.partition, c.items])).toEqual([
      ['a', [1, 3]],
      ['b', [2]],
    ]);
    calls.forEach((c) => c.done());
    await expect(Promise.all(replies)).resolves.toEqual(['a:1', 'b:2', 'a:3']);
  });

  it('when a batch fails as a whole, then each of its items runs alone, so only the faulty one gets an error', async () => {
    const { batcher, calls, settle } = harness();
    const replies = [12, 13, 14].map((i) => batcher.submit('t', i));
    const settled = Promise.allSettled(replies);
    await settle();
    calls[0]!.done();
    await settle();
    expect(calls.slice(1).map((c) => [c.kind, c.items])).toEqual([
      ['one', [12]],
      ['one', [13]],
      ['one', [14]],
    ]);
    calls.slice(1).forEach((c) => c.done());
    const outcomes = await settled;
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toEqual(new Error('13 alone'));
  });

  it('when flightsMax is 2, then a second call starts while the first is in flight, and a third waits', async () => {
    const { batcher, calls, settle } = harness({ flightsMax: 2 });
    const replies = [batcher.submit('t', 1)];
    await settle();
    replies.push(batcher.submit('t', 2));
    await settle();
    replies.push(batcher.submit('t', 3));
    await settle();
    expect(calls.map((c) => c.items)).toEqual([[1], [2]]);
    calls[0]!.done();
    await settle();
    expect(calls.map((c) => c.items)).toEqual([[1], [2], [3]]);
    calls.slice(1).forEach((c) => c.done());
    await expect(Promise.all(replies)).resolves.toEqual(['t:1', 't:2', 't:3']);
  });
});

describe('NaturalBatcher flights (metrics)', () => {
  it('tells of every call when it ends: its size, how long its oldest item waited for it, how long it took; a failing observer reaches no item', async () => {
    const flights: [string, BatchFlight][] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const batcher = new NaturalBatcher<number, number>({
      sizeMax: 8,
      flightsMax: 1,
      runBatch: (_p, items) => Promise.resolve(items),
      runOne: async (_p, item) => {
        if (item === 1) await held;
        return item;
      },
      onFlight: (partition, flight) => {
        flights.push([partition, flight]);
        throw new Error('observer fault');
      },
    });
    const first = batcher.submit('t', 1);
    await new Promise((resolve) => setImmediate(resolve));
    const later = [2, 3, 4].map((i) => batcher.submit('t', i));
    await new Promise((resolve) => setTimeout(resolve, 30));
    release();
    await expect(first).resolves.toBe(1);
    await expect(Promise.all(later)).resolves.toEqual([2, 3, 4]);
    expect(flights.map(([p, f]) => [p, f.size])).toEqual([
      ['t', 1],
      ['t', 3],
    ]);
    const [lone, batch] = flights.map(([, f]) => f);
    // The first call was held ~30 ms, and the three waited it out.
    expect(lone!.flightMs).toBeGreaterThanOrEqual(25);
    expect(batch!.waitedMs).toBeGreaterThanOrEqual(25);
    expect(lone!.waitedMs).toBeGreaterThanOrEqual(0);
  });

  it('when drained, then it resolves once every item submitted has its answer, a failed one included, and at once when none waits', async () => {
    const { batcher, calls, settle } = harness();
    await batcher.drain();
    const replies = [batcher.submit('t1', 1), batcher.submit('t2', 13)];
    const answered = replies.map((r) => r.then(String, String));
    let drained = false;
    const draining = batcher.drain().then(() => (drained = true));
    await settle();
    calls[0]!.done();
    await settle();
    expect(drained).toBe(false);
    calls[1]!.done();
    await draining;
    expect(await Promise.all(answered)).toEqual(['t1:1', 'Error: 13 alone']);
  });
});
