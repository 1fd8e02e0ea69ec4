import { createEgressPolicy } from '../../../platform/webhooks/egress';

const noAllowList = createEgressPolicy([]);

describe('createEgressPolicy without an allow-list', () => {
  // Each refused range at its first and last address, with its public neighbours below.
  it.each([
    ['0.0.0.0/8 (this network)', '0.0.0.0'],
    ['0.0.0.0/8, last', '0.255.255.255'],
    ['10/8, first', '10.0.0.0'],
    ['10/8', '10.0.0.1'],
    ['10/8, last', '10.255.255.255'],
    ['CGNAT 100.64/10, first', '100.64.0.0'],
    ['CGNAT 100.64/10, last', '100.127.255.255'],
    ['loopback 127/8, first', '127.0.0.0'],
    ['loopback', '127.0.0.1'],
    ['loopback 127/8, last', '127.255.255.255'],
    ['link-local 169.254/16, first', '169.254.0.0'],
    ['the cloud metadata address', '169.254.169.254'],
    ['link-local 169.254/16, last', '169.254.255.255'],
    ['172.16/12, first', '172.16.0.0'],
    ['172.16/12, last', '172.31.255.255'],
    ['192.0.0/24 (IETF protocol assignments)', '192.0.0.1'],
    ['TEST-NET-1', '192.0.2.1'],
    ['192.168/16, first', '192.168.0.0'],
    ['192.168/16, last', '192.168.255.255'],
    ['benchmarking 198.18/15, last', '198.19.255.255'],
    ['TEST-NET-3', '203.0.113.9'],
    ['multicast 224/4, first', '224.0.0.0'],
    ['multicast 224/4, last', '239.255.255.255'],
    ['reserved 240/4, first', '240.0.0.0'],
    ['broadcast', '255.255.255.255'],
    ['IPv6 unspecified', '::'],
    ['IPv6 loopback', '::1'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-mapped metadata address', '::ffff:169.254.169.254'],
    ['IPv4-mapped private, hex form', '::ffff:a00:1'],
    ['IPv4-compatible loopback (deprecated form)', '::127.0.0.1'],
    ['NAT64 of the metadata address', '64:ff9b::a9fe:a9fe'],
    ['unique-local fc00::/7, first', 'fc00::'],
    ['unique-local fc00::/7, last', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['link-local fe80::/10, first', 'fe80::'],
    ['link-local with a zone', 'fe80::1%eth0'],
    ['link-local fe80::/10, last', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['IPv6 multicast', 'ff02::1'],
    ['IPv6 documentation', '2001:db8::1'],
    ['6to4 (carries 127.0.0.1)', '2002:7f00:1::1'],
    ['just below global unicast 2000::/3', '1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ['IPv6 documentation 3fff::/20', '3fff::1'],
    ['just past global unicast 2000::/3', '4000::'],
    ['not an address', 'localhost'],
    ['empty', ''],
  ])('refuses %s: %s', (_range, address) => {
    expect(noAllowList.allows(address)).toBe(false);
  });

  it.each([
    ['just below 10/8', '9.255.255.255'],
    ['just past 10/8', '11.0.0.0'],
    ['just below CGNAT', '100.63.255.255'],
    ['just past CGNAT', '100.128.0.0'],
    ['just below loopback', '126.255.255.255'],
    ['just past loopback', '128.0.0.0'],
    ['just below link-local', '169.253.255.255'],
    ['just past link-local', '169.255.0.0'],
    ['just below 172.16/12', '172.15.255.255'],
    ['just past 172.16/12', '172.32.0.0'],
    ['just below 192.168/16', '192.167.255.255'],
    ['just past 192.168/16', '192.169.0.0'],
    ['just below multicast', '223.255.255.255'],
    ['just past 0/8', '1.0.0.0'],
    ['a public resolver', '8.8.8.8'],
    ['IPv4-mapped public', '::ffff:8.8.8.8'],
    ['public IPv6', '2606:4700:4700::1111'],
    ['first of global unicast 2000::/3', '2000::'],
    ['just below the documentation range 3fff::/20', '3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
  ])('allows %s: %s', (_range, address) => {
    expect(noAllowList.allows(address)).toBe(true);
  });
});

describe('createEgressPolicy with an allow-list', () => {
  const policy = createEgressPolicy(['127.0.0.1/32', '::1/128', '10.1.0.0/16']);

  it.each(['127.0.0.1', '::ffff:127.0.0.1', '::1', '10.1.0.0', '10.1.255.255', '8.8.8.8'])(
    'allows %s',
    (address) => expect(policy.allows(address)).toBe(true),
  );

  it.each(['127.0.0.2', '::2', '10.0.255.255', '10.2.0.0', '169.254.169.254', '::ffff:10.2.0.1'])(
    'still refuses %s',
    (address) => expect(policy.allows(address)).toBe(false),
  );

  it('accepts spaces around an entry', () => {
    expect(createEgressPolicy([' 127.0.0.0/8 ']).allows('127.9.9.9')).toBe(true);
  });

  it.each(['127.0.0.1', '127.0.0.1/33', '::1/129', 'localhost/8', '10.0.0.0/', 'not-a-cidr'])(
    'throws at construction for the invalid entry %s, naming it',
    (cidr) => {
      expect(() => createEgressPolicy(['::1/128', cidr])).toThrow(
        `WEBHOOK_EGRESS_ALLOW: '${cidr}' is not a CIDR`,
      );
    },
  );
});
