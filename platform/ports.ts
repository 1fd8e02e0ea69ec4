/**
 * Where each process listens unless its variable says otherwise: the configuration's defaults
 * (platform/config.ts), and what the image's health check asks (cli/healthcheck.ts), which reads
 * only these so that it loads no more than it needs every 10 s.
 */
export const PORT_SETTINGS = {
  ledger: { variable: 'LEDGER_PORT', byDefault: 8083 },
  runs: { variable: 'RUNS_PORT', byDefault: 8082 },
  quota: { variable: 'QUOTA_PORT', byDefault: 8081 },
  worker: { variable: 'WORKER_METRICS_PORT', byDefault: 9464 },
} as const;

export type PortOwner = keyof typeof PORT_SETTINGS;

/** The port `owner` listens on as `env` says, or why that is no port. */
export function portOf(owner: PortOwner, env: NodeJS.ProcessEnv): number | string {
  const { variable, byDefault } = PORT_SETTINGS[owner];
  const text = env[variable];
  if (text === undefined || text === '') return byDefault;
  const port = Number(text);
  return Number.isInteger(port) && port >= 0 && port <= 65535
    ? port
    : `${variable}=${text} is no port (0 to 65535)`;
}
