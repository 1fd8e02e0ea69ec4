import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { DatabasePool } from '../../db/pool';
import { withSystem } from '../../db/ledger/context';
import { claimDueHoldStarts, markHoldStartsDispatched } from '../../db/ledger/hold-outbox';
import { findEntries } from '../../db/ledger/transactions';
import type { Config } from '../../platform/config';
import type { Logger } from '../../platform/logger';
import {
  createOutboxDispatcher,
  type OutboxDispatcher,
  type OutboxSource,
} from '../../platform/outbox';
import { taskQueues } from '../../contracts/shared/task-queues';
import {
  executionSearchAttributes,
  HOLD_EXPIRES_AT,
} from '../../contracts/shared/search-attributes';
import { holdSummary, holdSweepSummary, type HoldLeg } from '../../contracts/ledger/summaries';
import { minorToDecimal } from './money';
import {
  holdSettledSignal,
  holdSweepScheduleId,
  holdWorkflowId,
  type HoldInput,
} from '../../contracts/ledger/hold';

/** How often every API process looks for holds whose workflow start is not confirmed. */
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

/** A hold the outbox asks a workflow for; one settled before its start needs none. */
interface HoldStart {
  hold: HoldInput;
  pending: boolean;
}

/**
 * Hold starts as an outbox: a posting that places a hold writes a ledger.hold_outbox row in its
 * own transaction, with its process's task-queue prefix (migration 0018): a process starts the
 * holds of its own prefix only (a test run never takes a deployment's, nor the reverse); each
 * claim of a due row pushes its next attempt back (doubling, up to a minute), so a Temporal
 * outage is not hammered; dispatched_at records the start.
 */
function holdStarts(deps: HoldDeps): OutboxSource<HoldStart> {
  return {
    name: 'ledger holds',
    keyOf: (start) => start.hold.transactionId,
    due: async (limit, skip) => {
      const rows = await withSystem(deps.pool, (tx) =>
        claimDueHoldStarts(tx, {
          taskQueuePrefix: deps.config.taskQueuePrefix,
          retryDelayMaxSeconds: OUTBOX_RETRY_DELAY_MAX_SECONDS,
          limit,
          skip,
        }),
      );
      return rows.map((row) => ({
        hold: {
          tenantId: row.tenant_id,
          transactionId: row.transaction_id,
          expiresAtMs: Date.parse(row.expires_at),
        },
        pending: row.state === 'pending',
      }));
    },
    workflowOf: async ({ hold, pending }) =>
      pending
        ? {
            workflowType: 'ledgerHoldWorkflow',
            options: {
              workflowId: holdWorkflowId(hold.transactionId),
              taskQueue: taskQueues(deps.config.taskQueuePrefix).ledger,
              args: [hold],
              typedSearchAttributes: [
                ...executionSearchAttributes(hold.tenantId, 'ledger'),
                { key: HOLD_EXPIRES_AT, value: new Date(hold.expiresAtMs) },
              ],
              ...holdSummary({ ...hold, legs: await holdLegs(deps, hold.transactionId) }),
            },
          }
        : null,
    markStarted: async (transactionIds) => {
      await withSystem(deps.pool, (tx) => markHoldStartsDispatched(tx, transactionIds));
    },
  };
}

/**
 * A hold's legs with their asset codes and amounts as decimals, for its execution's summary: one
 * indexed read (at most 100 legs) when its workflow starts, off the request path.
 */
async function holdLegs(deps: HoldDeps, transactionId: string): Promise<HoldLeg[]> {
  const rows = await withSystem(deps.pool, (tx) => findEntries(tx, transactionId));
  return rows.map((r) => ({
    accountId: r.account_id,
    direction: r.direction,
    amount: minorToDecimal(r.amount_minor, r.scale),
    asset: r.code,
  }));
}

/**
 * Hands holds to Temporal (platform/outbox.ts): right after a posting commits, its hold's
 * workflow starts without the posting waiting on it; the sweeper retries whatever is left. Commit
 * or void signals the workflow to end early.
 */
export class HoldDispatcher {
  private readonly outbox: OutboxDispatcher<HoldStart>;

  constructor(private readonly deps: HoldDeps) {
    this.outbox = createOutboxDispatcher(deps, holdStarts(deps), {
      sweepIntervalMs: OUTBOX_POLL_INTERVAL_MS,
    });
  }

  start(): void {
    this.outbox.start();
    if (this.deps.config.ledger.holdSweepSchedule) void this.ensureSweepSchedule();
  }

  stop(): Promise<void> {
    return this.outbox.stop();
  }

  /** Fire and forget: never awaited by the posting, never fails it. */
  dispatch(hold: HoldInput): void {
    this.outbox.enqueue({ hold, pending: true });
  }

  /** One look for due holds (the sweeper's tick). */
  sweep(): Promise<void> {
    return this.outbox.sweep();
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
          ...holdSweepSummary(),
        },
        typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'ledger'),
      });
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning))
        this.deps.logger.warn({ err: error }, 'hold sweep schedule not created');
    }
  }
}
