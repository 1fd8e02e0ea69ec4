import type { Context } from 'koa';
import { isPrivateAddress, privateNetworkOnly } from '../../api/http/private-network';
import { errorResponse } from '../../api/http/error-response';
import type { DomainError } from '../../platform/errors';
import { LEDGER_ERRORS } from '../../services/ledger/errors';
import { RUNS_ERRORS } from '../../services/runs/errors';

describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '::1',
    '::ffff:127.0.0.1',
    'fd00::1',
  ])('accepts %s', (address) => expect(isPrivateAddress(address)).toBe(true));

  it.each([
    '8.8.8.8',
    '172.32.0.1',
    '172.15.255.255',
    '::ffff:8.8.8.8',
    '2001:db8::1',
    'not-an-ip',
    undefined,
  ])('refuses %s', (address) => expect(isPrivateAddress(address)).toBe(false));
});

describe('privateNetworkOnly', () => {
  const guard = privateNetworkOnly('diagnostics');
  const from = (remoteAddress: string, state: Record<string, unknown> = {}) =>
    ({ req: { socket: { remoteAddress } }, state }) as unknown as Context;

  it('lets a private caller through to the route', async () => {
    const next = jest.fn(() => Promise.resolve());
    await guard(from('10.0.0.7'), next);
    expect(next).toHaveBeenCalledTimes(1);
  });

  it('refuses a public caller with 403 before the route runs', async () => {
    const next = jest.fn(() => Promise.resolve());
    const refused = (await guard(from('8.8.8.8'), next).catch((e: unknown) => e)) as DomainError;
    expect(refused).toMatchObject({
      code: 'forbidden',
      message: 'diagnostics are served to private networks only',
    });
    expect(errorResponse(refused, RUNS_ERRORS).status).toBe(403);
    expect(next).not.toHaveBeenCalled();
  });

  it('judges the client createApp resolved (behind a trusted proxy, the forwarded one), not the proxy', async () => {
    const next = jest.fn(() => Promise.resolve());
    const proxied = from('10.0.0.2', { clientAddress: '8.8.8.8' });
    await expect(guard(proxied, next)).rejects.toMatchObject({ code: 'forbidden' });
    await guard(from('10.0.0.2', { clientAddress: '10.0.0.9' }), next);
    expect(next).toHaveBeenCalledTimes(1);
  });

  it("refuses with the service's own error code when given one (the ledger's FORBIDDEN)", async () => {
    const next = jest.fn(() => Promise.resolve());
    const refused = (await privateNetworkOnly('metrics', 'FORBIDDEN')(from('8.8.8.8'), next).catch(
      (e: unknown) => e,
    )) as DomainError;
    expect(refused).toMatchObject({ code: 'FORBIDDEN' });
    expect(errorResponse(refused, LEDGER_ERRORS).status).toBe(403);
  });
});
