import type { Config } from '../config';

/** What every delivery workflow of this deployment is started with (its retry schedule). */
export const webhookTerms = (config: Config) => ({
  retryDelaysSeconds: config.webhooks.retryDelaysSeconds,
});
