import Docker from 'dockerode';
import type { Config } from './config';

export type { Docker };

export function createDocker(config: Config): Docker {
  return new Docker({ socketPath: config.dockerSocket });
}
