import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';

/**
 * Named activity option profiles. Every proxyActivities call picks one of these instead of
 * leaning on SDK defaults. A service's final refusals already end an activity non-retryable,
 * typed by their code (activities/shared/domain-failures.ts); the types listed here never retry
 * either, whoever throws them.
 */
export const NON_RETRYABLE = ['ImageNotFound'];

/** A short Postgres write or read. */
export const postgresProfile: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 ms',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
};

/** A short Postgres step run as a local activity (in the workflow task): the same limits. */
export const localPostgresProfile: LocalActivityOptions = {
  startToCloseTimeout: postgresProfile.startToCloseTimeout,
  retry: postgresProfile.retry,
};

/** A short call to the Docker engine (pull, create, start, inspect, pause). */
export const dockerCallProfile: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '20 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
};

/** Claiming a host: waits on the any-host queue until some Docker worker is alive. */
export const claimHostProfile: ActivityOptions = {
  scheduleToCloseTimeout: '10 minutes',
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '10 seconds',
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
};
