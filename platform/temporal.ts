import fs from 'node:fs';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import type { Config, TemporalTls } from './config';
import { payloadDataConverter } from './payload-codec';

/**
 * A Temporal client whose connection is made on first use, so an API starts (and answers
 * its probes) while Temporal is still coming up.
 */
export function createTemporalClient(config: Config): Client {
  const connection = Connection.lazy(temporalConnectionOptions(config));
  return new Client({
    connection,
    namespace: config.temporalNamespace,
    dataConverter: payloadDataConverter(config.temporalPayloadKeys),
  });
}

/**
 * What a client or a worker connects to Temporal with: the address, TLS (server CA, mTLS pair,
 * server name) and the API key. The same for the APIs, the worker and the benches.
 */
export function temporalConnectionOptions(config: Config): {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
} {
  return {
    address: config.temporalAddress,
    ...(config.temporalTls ? { tls: tlsOf(config.temporalTls) } : {}),
    ...(config.temporalApiKey ? { apiKey: config.temporalApiKey } : {}),
  };
}

function tlsOf(tls: TemporalTls): TLSConfig {
  return {
    ...(tls.serverName ? { serverNameOverride: tls.serverName } : {}),
    ...(tls.caFile ? { serverRootCACertificate: readPem(tls.caFile, 'TEMPORAL_TLS_CA_FILE') } : {}),
    ...(tls.clientCert
      ? {
          clientCertPair: {
            crt: readPem(tls.clientCert.certFile, 'TEMPORAL_TLS_CERT_FILE'),
            key: readPem(tls.clientCert.keyFile, 'TEMPORAL_TLS_KEY_FILE'),
          },
        }
      : {}),
  };
}

/** A PEM file, read at start so a wrong path stops the process with its variable's name. */
function readPem(file: string, variable: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${file}: ${(error as Error).message}`);
  }
}
