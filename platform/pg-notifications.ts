import pg from 'pg';
import type { Logger } from './logger';

const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 5_000;

/**
 * A connection of its own LISTENing on `channel`: `onNotify` runs for each notification, with its
 * payload, and once after every (re)connection, without one, since notifications sent while it
 * was away are lost. A lost
 * connection is made again, waiting longer each time (up to 5 s). Callers keep a slower poll of
 * their own as the floor.
 */
export function listenForNotifications(options: {
  databaseUrl: string;
  channel: string;
  applicationName: string;
  onNotify: (payload?: string) => void;
  logger: Logger;
}): { close(): Promise<void> } {
  const { channel, onNotify, logger } = options;
  let client: pg.Client | null = null;
  let closed = false;
  let delayMs = RECONNECT_MIN_MS;
  let retry: NodeJS.Timeout | undefined;

  const again = () => {
    if (closed || retry !== undefined) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, delayMs);
    delayMs = Math.min(RECONNECT_MAX_MS, delayMs * 2);
  };
  const connect = async () => {
    const url = new URL(options.databaseUrl);
    url.searchParams.set('application_name', options.applicationName);
    const connection = new pg.Client({ connectionString: url.toString() });
    let lost = false;
    const lose = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (client === connection) client = null;
      if (!closed)
        logger.warn({ err: error?.message, channel }, 'notifications lost; reconnecting');
      connection.end().catch(() => undefined);
      again();
    };
    connection.on('error', lose);
    connection.on('end', () => lose());
    connection.on('notification', (notification) => onNotify(notification.payload));
    try {
      await connection.connect();
      await connection.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      return lose(error as Error);
    }
    if (closed) return void connection.end().catch(() => undefined);
    client = connection;
    delayMs = RECONNECT_MIN_MS;
    onNotify();
  };
  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
