import net from 'node:net';
import type { Context, Next } from 'koa';
import { DomainError } from '../../platform/errors';
import { clientAddress } from './client-address';

const privateV4 = new net.BlockList();
privateV4.addSubnet('127.0.0.0', 8, 'ipv4');
privateV4.addSubnet('10.0.0.0', 8, 'ipv4');
privateV4.addSubnet('172.16.0.0', 12, 'ipv4');
privateV4.addSubnet('192.168.0.0', 16, 'ipv4');
privateV4.addSubnet('169.254.0.0', 16, 'ipv4');
privateV4.addAddress('::1', 'ipv6');
privateV4.addSubnet('fc00::', 7, 'ipv6');
privateV4.addSubnet('fe80::', 10, 'ipv6');

/** True for loopback, RFC 1918, link-local and unique-local addresses (IPv4-mapped too). */
export function isPrivateAddress(address: string | undefined): boolean {
  if (!address) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return privateV4.check(mapped[1], 'ipv4');
  const family = net.isIP(address);
  if (family === 4) return privateV4.check(address, 'ipv4');
  if (family === 6) return privateV4.check(address, 'ipv6');
  return false;
}

/**
 * Serves a route to loopback and private networks only (operator endpoints: metrics,
 * diagnostics), judged by the client's address (behind a trusted proxy the forwarded one, never
 * the proxy's); anyone else is refused with the service's `code` for PRIVATE_NETWORK_ONLY
 * (../errors.ts: 403 in its catalogue), in the service's envelope.
 */
export function privateNetworkOnly(what: string, code = 'forbidden') {
  return async function refuseOutsiders(ctx: Context, next: Next): Promise<void> {
    if (!isPrivateAddress(clientAddress(ctx))) {
      throw new DomainError(code, { message: `${what} are served to private networks only` });
    }
    await next();
  };
}
