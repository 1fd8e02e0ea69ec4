/**
 * What a service and the delivery workflow share (workflows/shared/delivery.ts): its id, input
 * and the attempt's verdict. Pure, so the sandboxed bundle and the API both import it.
 */
export type DeliveringService = 'runs' | 'quota';

export const deliveryWorkflowId = (service: DeliveringService, deliveryId: string): string =>
  `delivery/${service}/${deliveryId}`;

export interface DeliveryWorkflowInput {
  service: DeliveringService;
  deliveryId: string;
  /** Waits before attempts 2, 3, ...: at most one attempt more than there are waits. */
  retryDelaysSeconds: number[];
  /**
   * Where a delivery whose first attempt its API process made goes on: this attempt, not before
   * this instant (a retry's due time; null: at once, an attempt its process died in). Absent: from
   * the first attempt.
   */
  resumeFrom?: { attempt: number; notBefore: string | null };
}

/** What one attempt made of the delivery (recorded by the attempt activity itself). */
export type AttemptVerdict =
  /** A 2xx. */
  | 'delivered'
  /** 408, 429, 5xx, a timeout, a transport failure or a 3xx: another attempt, if any is left. */
  | 'retry'
  /** Any other 4xx, a refused target, or no attempt left: the delivery is dead. */
  | 'dead'
  /** Nothing to attempt: the delivery was cancelled (its endpoint deleted) or has ended. */
  | 'ended'
  /** Not yet: an earlier delivery released with it has not finished its first attempt. */
  | 'wait';
