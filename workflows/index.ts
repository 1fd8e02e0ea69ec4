// Every workflow type the platform runs, bundled once for all workers.
export * from './platform';
export * from './runs';
export * from './ledger';
export * from './quota';
