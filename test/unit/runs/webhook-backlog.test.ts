import {
  emptyBacklog,
  enqueue,
  startWaitingAttempts,
  type AttemptOutcome,
  type Backlog,
  type DeliveryStart,
} from '../../../services/runs/webhooks/backlog';

const delivery = (id: number, endpointId = 'ep_a'): DeliveryStart => ({
  deliveryId: String(id),
  tenantId: 't',
  endpointId,
});

/** Resolves once the backlog has nothing queued and nothing in flight; throws past 2 s. */
async function drained(backlog: Backlog): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (backlog.queued > 0 || backlog.inFlight.size > 0) {
    if (Date.now() > deadline) {
      backlog.stopped = true;
      throw new Error(`not drained: ${backlog.queued} queued, ${backlog.inFlight.size} in flight`);
    }
    await Promise.all([...backlog.inFlight]).then(() => new Promise((r) => setImmediate(r)));
  }
}

describe("a dispatcher's backlog of first attempts", () => {
  it('queues each endpoint in delivery_id order, whatever order they arrive in', () => {
    const backlog = emptyBacklog();
    for (const id of [5, 3, 9, 4]) enqueue(backlog, delivery(id));
    enqueue(backlog, delivery(1, 'ep_b'));
    expect(backlog.queues.get('ep_a')!.map((d) => d.deliveryId)).toEqual(['3', '4', '5', '9']);
    expect(backlog.queued).toBe(5);
  });

  it('makes one attempt per endpoint at a time, up to the bound in flight', async () => {
    const backlog = emptyBacklog();
    for (const id of [1, 2]) enqueue(backlog, delivery(id, 'ep_a'));
    for (const id of [3, 4]) enqueue(backlog, delivery(id, 'ep_b'));
    enqueue(backlog, delivery(5, 'ep_c'));
    let inFlight = 0;
    let most = 0;
    const order: string[] = [];
    startWaitingAttempts(backlog, {
      inFlightMax: 2,
      attempt: async (d) => {
        most = Math.max(most, ++inFlight);
        order.push(d.deliveryId);
        await new Promise((r) => setTimeout(r, 5));
        inFlight--;
        return 'done';
      },
      failed: () => undefined,
    });
    await drained(backlog);
    expect(most).toBe(2);
    expect(order.filter((id) => ['1', '2'].includes(id))).toEqual(['1', '2']);
    expect(order.filter((id) => ['3', '4'].includes(id))).toEqual(['3', '4']);
    expect(order).toHaveLength(5);
  });

  // Seen under load: a later delivery held back by an earlier one of another process went back
  // to the head of its queue, ahead of that earlier one, adopted meanwhile; it was held back
  // again and again, and the endpoint stalled while this process renewed both leases.
  it('puts a delivery held back behind an earlier one adopted while it waited, so both go out', async () => {
    const backlog = emptyBacklog();
    enqueue(backlog, delivery(5));
    const attempted: string[] = [];
    const earlierOutstanding = () => !attempted.includes('3');
    const attempt = async (d: DeliveryStart): Promise<AttemptOutcome> => {
      await Promise.resolve(); // the attempt's query
      if (d.deliveryId === '5' && earlierOutstanding()) {
        // The earlier one (another process's, lapsed) is adopted while this one waits.
        if (!backlog.queues.get('ep_a')!.some((q) => q.deliveryId === '3'))
          enqueue(backlog, delivery(3));
        return 'wait';
      }
      attempted.push(d.deliveryId);
      return 'done';
    };
    startWaitingAttempts(backlog, { inFlightMax: 32, attempt, failed: () => undefined });
    await drained(backlog);
    expect(attempted).toEqual(['3', '5']);
  });

  it('frees the endpoint and tells of an attempt that throws, then goes on with the next', async () => {
    const backlog = emptyBacklog();
    for (const id of [1, 2]) enqueue(backlog, delivery(id));
    const failed: string[] = [];
    const attempted: string[] = [];
    startWaitingAttempts(backlog, {
      inFlightMax: 32,
      attempt: (d) => {
        attempted.push(d.deliveryId);
        return d.deliveryId === '1' ? Promise.reject(new Error('boom')) : Promise.resolve('done');
      },
      failed: (d, error) => failed.push(`${d.deliveryId}: ${(error as Error).message}`),
    });
    await drained(backlog);
    expect(failed).toEqual(['1: boom']);
    expect(attempted).toEqual(['1', '2']);
    expect(backlog.busy.size).toBe(0);
  });
});
