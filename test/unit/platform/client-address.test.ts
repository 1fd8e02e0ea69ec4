import type { IncomingMessage } from 'node:http';
import { clientAddressResolver } from '../../../api/http/client-address';
import { loadConfig } from '../../../platform/config';

/** A request from `peer` carrying `forwarded` as its X-Forwarded-For (absent when undefined). */
function request(peer: string, forwarded?: string): IncomingMessage {
  return {
    socket: { remoteAddress: peer },
    headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
  } as unknown as IncomingMessage;
}

describe('the client address (TRUSTED_PROXIES)', () => {
  it('with no trusted proxies, is the socket peer whatever X-Forwarded-For says', () => {
    const addressOf = clientAddressResolver([]);
    expect(addressOf(request('10.0.0.5', '203.0.113.9'))).toBe('10.0.0.5');
    expect(addressOf(request('127.0.0.1'))).toBe('127.0.0.1');
  });

  it('behind a trusted proxy, is the rightmost address not trusted', () => {
    const addressOf = clientAddressResolver(['10.0.0.0/8', '192.168.1.1']);
    expect(addressOf(request('10.0.0.5', '203.0.113.9'))).toBe('203.0.113.9');
    // Two trusted hops (an edge proxy, then the balancer): the client is before both.
    expect(addressOf(request('10.0.0.5', '203.0.113.9, 192.168.1.1'))).toBe('203.0.113.9');
    // What the client itself wrote to the left of the first untrusted hop counts for nothing.
    expect(addressOf(request('10.0.0.5', '1.2.3.4, 203.0.113.9'))).toBe('203.0.113.9');
    // An untrusted peer's header is ignored.
    expect(addressOf(request('198.51.100.7', '203.0.113.9'))).toBe('198.51.100.7');
    // A trusted peer without the header: the peer is the client.
    expect(addressOf(request('10.0.0.5'))).toBe('10.0.0.5');
  });

  it('takes the keywords loopback, linklocal and uniquelocal, and IPv6 ranges', () => {
    const addressOf = clientAddressResolver(['loopback', 'fd00::/8']);
    expect(addressOf(request('127.0.0.1', '203.0.113.9'))).toBe('203.0.113.9');
    expect(addressOf(request('fd00::1', '2001:db8::7'))).toBe('2001:db8::7');
  });

  it('is read from the environment, and a value that names no address or range stops the start', () => {
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(loadConfig({ TRUSTED_PROXIES: ' 10.0.0.0/8, loopback ,' }).trustedProxies).toEqual([
      '10.0.0.0/8',
      'loopback',
    ]);
    for (const bad of ['10.0.0.0/33', 'proxy.example', '10.0.0.1/8/2'])
      expect(() => loadConfig({ TRUSTED_PROXIES: bad })).toThrow(/TRUSTED_PROXIES/);
    // The parser's words come through as written, braces and all (not read as a joi template).
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/{8}' })).toThrow(
      '"TRUSTED_PROXIES": invalid range on address: 10.0.0.0/{8}',
    );
  });
});
