import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import { sql, type DatabasePool } from '../../db/pool';
import { withSystem } from '../../db/ledger/context';
import type { Config } from '../platform/config';
import type { Logger } from '../platform/logger';
import { taskQueues } from '../platform/temporal';
import { executionSearchAttributes } from '../../workflows/platform/search-attributes';
import {
  holdSettledSignal,
  holdSweepScheduleId,
  holdWorkflowId,
  type HoldInput,
} from '../../workflows/ledger/hold';

/** Outbox rows handed to Temporal per drain; the rest wait for the next tick. */
export const OUTBOX_BATCH_MAX = 100;
export const OUTBOX_POLL_INTERVAL_MS = 1_000;
/** Backoff between attempts at one outbox row while Temporal is unreachable. */
export const OUTBOX_RETRY_DELAY_MAX_SECONDS = 60;
/** The sweep and the schedule belong to the operator, not to a customer tenant. */
export const PLATFORM_TENANT = 'platform';

interface HoldDeps {
  pool: DatabasePool;
  temporal: Client;
  config: Config;
  logger: Logger;
}

/**
 * Hands holds to Temporal. A posting writes an outbox row in its own transaction; right after
 * it commits, `dispatch` tries to start the hold's workflow without the posting waiting on it;
 * a poll loop retries whatever is left (process died, Temporal down) with backoff. Starting is
 * idempotent by workflow id, so a row dispatched twice starts one workflow.
 */
export class HoldDispatcher {
  private timer?: NodeJS.Timeout;
  private draining = false;

  constructor(private readonly deps: HoldDeps) {}

  start(): void {
    this.timer = setInterval(() => void this.drain(), OUTBOX_POLL_INTERVAL_MS);
    this.timer.unref();
    if (this.deps.config.ledger.holdSweepSchedule) void this.ensureSweepSchedule();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Fire and forget: never awaited by the posting, never fails it. */
  dispatch(hold: HoldInput): void {
    this.startWorkflow(hold)
      .then(() => this.markDispatched([hold.transactionId]))
      .catch((error: unknown) =>
        this.deps.logger.debug(
          { err: error, transactionId: hold.transactionId },
          'hold dispatch deferred to the outbox',
        ),
      );
  }

  /** Commit or void ends the hold's workflow early; a workflow not started yet needs nothing. */
  settled(transactionId: string, state: string): void {
    this.deps.temporal.workflow
      .getHandle(holdWorkflowId(transactionId))
      .signal(holdSettledSignal, { state })
      .catch((error: unknown) => {
        if (!(error instanceof WorkflowNotFoundError))
          this.deps.logger.debug({ err: error, transactionId }, 'hold settle signal failed');
      });
  }

  async drain(): Promise<number> {
    if (this.draining) return 0;
    this.draining = true;
    try {
      const rows = await this.claimDue();
      const started: string[] = [];
      for (const row of rows) {
        if (row.state !== 'pending') {
          started.push(row.transaction_id);
          continue;
        }
        try {
          await this.startWorkflow({
            tenantId: row.tenant_id,
            transactionId: row.transaction_id,
            expiresAtMs: Date.parse(row.expires_at),
          });
          started.push(row.transaction_id);
        } catch (error) {
          this.deps.logger.warn(
            { err: error, transactionId: row.transaction_id },
            'hold workflow start failed; will retry',
          );
        }
      }
      await this.markDispatched(started);
      return started.length;
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'hold outbox drain failed');
      return 0;
    } finally {
      this.draining = false;
    }
  }

  private async claimDue() {
    return (await withSystem(this.deps.pool, (tx) =>
      tx.any(sql.unsafe`
        UPDATE ledger.hold_outbox o
        SET attempts = o.attempts + 1,
            next_attempt_at = now() + make_interval(secs => least(${OUTBOX_RETRY_DELAY_MAX_SECONDS}, power(2, o.attempts)))
        FROM ledger.transactions t
        WHERE t.transaction_id = o.transaction_id
          AND o.transaction_id IN (
            SELECT transaction_id FROM ledger.hold_outbox
            WHERE dispatched_at IS NULL AND next_attempt_at <= now()
            ORDER BY next_attempt_at LIMIT ${OUTBOX_BATCH_MAX} FOR UPDATE SKIP LOCKED)
        RETURNING o.transaction_id, o.tenant_id, o.expires_at, t.state`),
    )) as { transaction_id: string; tenant_id: string; expires_at: string; state: string }[];
  }

  private async markDispatched(transactionIds: string[]): Promise<void> {
    if (transactionIds.length === 0) return;
    await withSystem(this.deps.pool, (tx) =>
      tx.query(sql.unsafe`
        UPDATE ledger.hold_outbox SET dispatched_at = now()
        WHERE transaction_id = ANY(${sql.array(transactionIds, 'uuid')}) AND dispatched_at IS NULL`),
    );
  }

  private async startWorkflow(hold: HoldInput): Promise<void> {
    try {
      await this.deps.temporal.workflow.start('ledgerHoldWorkflow', {
        workflowId: holdWorkflowId(hold.transactionId),
        taskQueue: taskQueues(this.deps.config.taskQueuePrefix).ledger,
        args: [hold],
        typedSearchAttributes: executionSearchAttributes(hold.tenantId, 'ledger'),
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  /** The periodic backstop, visible to operators as a Temporal schedule. */
  async ensureSweepSchedule(): Promise<void> {
    const { config } = this.deps;
    try {
      await this.deps.temporal.schedule.create({
        scheduleId: holdSweepScheduleId(config.taskQueuePrefix),
        spec: { intervals: [{ every: `${config.ledger.holdSweepIntervalSeconds}s` }] },
        action: {
          type: 'startWorkflow',
          workflowType: 'ledgerHoldSweepWorkflow',
          taskQueue: taskQueues(config.taskQueuePrefix).ledger,
          args: [],
          typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'ledger'),
        },
        typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'ledger'),
      });
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning))
        this.deps.logger.warn({ err: error }, 'hold sweep schedule not created');
    }
  }
}
