/** What a consume, check or refund asks (api/quota/routes/consumption.ts validates it). */
export interface ConsumeBody {
  subject: string;
  items: Item[];
  idempotency_key?: string | null;
  metadata?: Record<string, unknown>;
}

/** One resource of a request and how much of it; items naming the same resource are summed. */
export interface Item {
  resource: string;
  amount: number;
}
