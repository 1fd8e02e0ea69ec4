import ipaddr from 'ipaddr.js';

/** Which addresses a webhook delivery may connect to. */
export interface EgressPolicy {
  /** True when a delivery may connect to `address` (an IP literal; anything else is refused). */
  allows(address: string): boolean;
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

/**
 * Global unicast IPv6 (RFC 4291). Outside it are the IPv4-compatible `::a.b.c.d`, NAT64
 * `64:ff9b::/96` (which a NAT64 gateway turns into any IPv4 address, 169.254.169.254 included)
 * and unassigned space, none of which a public receiver lives in.
 */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * Only public unicast addresses, unless `allowCidrs` (WEBHOOK_EGRESS_ALLOW) holds the address:
 * a local setup and the tests allow their loopback receiver that way. ipaddr.js names every
 * special-purpose range (loopback, private, link-local with the metadata address, CGNAT, 0/8,
 * multicast, broadcast, reserved and documentation ranges, unique-local, 6to4, Teredo, ...);
 * what it calls `unicast` is what is left. An IPv4-mapped IPv6 address is judged as the IPv4
 * address it carries. Throws when an allow entry is not a CIDR, so bad config fails at start-up.
 */
export function createEgressPolicy(allowCidrs: readonly string[]): EgressPolicy {
  const allowed = allowCidrs.map(parseAllowCidr);
  return {
    allows(address) {
      const parsed = parseAddress(address);
      if (parsed === null) return false;
      return allowed.some((cidr) => inCidr(parsed, cidr)) || isPublicUnicast(parsed);
    },
  };
}

function parseAllowCidr(cidr: string): Cidr {
  try {
    return ipaddr.parseCIDR(cidr.trim());
  } catch {
    throw new Error(
      `WEBHOOK_EGRESS_ALLOW: '${cidr}' is not a CIDR (an address with its prefix length, e.g. 127.0.0.1/32 or ::1/128)`,
    );
  }
}

/** The address as connected to: an IPv4-mapped IPv6 address reaches its IPv4 address. */
function parseAddress(address: string): Address | null {
  if (!ipaddr.isValid(address)) return null;
  return ipaddr.process(address);
}

function inCidr(address: Address, [network, prefixLength]: Cidr): boolean {
  return address.kind() === network.kind() && address.match(network, prefixLength);
}

function isPublicUnicast(address: Address): boolean {
  if (address.range() !== 'unicast') return false;
  return address.kind() === 'ipv4' || inCidr(address, IPV6_GLOBAL_UNICAST);
}
