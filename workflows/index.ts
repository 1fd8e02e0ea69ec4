// Every workflow type the platform runs, bundled once for all workers.
export * from './shared';
export * from './runs';
export * from './ledger';
export * from './quota';
