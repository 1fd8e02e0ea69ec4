import { Client, Connection } from '@temporalio/client';
import type { Config } from './config';
import { payloadDataConverter } from './payload-codec';

export { taskQueues, type TaskQueues } from '../workflows/platform/task-queues';

/**
 * A Temporal client whose connection is made on first use, so an API starts (and answers
 * its probes) while Temporal is still coming up.
 */
export function createTemporalClient(config: Config): Client {
  const connection = Connection.lazy({ address: config.temporalAddress });
  return new Client({
    connection,
    namespace: config.temporalNamespace,
    dataConverter: payloadDataConverter(config.temporalPayloadKeys),
  });
}
