import { randomBytes, randomUUID } from 'node:crypto';
import {
  judgeCredential,
  rememberedPrincipal,
  REMEMBERED_KEYS_MAX,
  sha256,
  tokenOf,
} from '../../../services/ledger/credentials';

/** A key that authenticates (judgeCredential remembers it); its bearer header. */
function authenticated(): string {
  const keyId = randomUUID();
  const secret = randomBytes(32).toString('base64url');
  judgeCredential(
    {
      key_id: keyId,
      tenant_id: randomUUID(),
      role: 'ledger_poster',
      secret_sha256: sha256(secret),
      expired: false,
      revoked: false,
      tenant_status: 'active',
      parent_id: null,
      parent_status: null,
    },
    secret,
  );
  return `Bearer ${tokenOf(keyId, secret)}`;
}

describe('remembered keys', () => {
  it('when a key authenticated, then its bearer is recognised, and with another secret it is not', () => {
    const bearer = authenticated();
    expect(rememberedPrincipal(bearer)?.principal.role).toBe('ledger_poster');
    const forged = bearer.slice(0, -3) + (bearer.endsWith('AAA') ? 'BBB' : 'AAA');
    expect(rememberedPrincipal(forged)).toBeNull();
  });

  it(`when ${REMEMBERED_KEYS_MAX} keys are remembered all stay; one more forgets the oldest only`, () => {
    const bearers = Array.from({ length: REMEMBERED_KEYS_MAX }, authenticated);
    expect(bearers.every((b) => rememberedPrincipal(b) !== null)).toBe(true);
    const newest = authenticated();
    expect(rememberedPrincipal(bearers[0])).toBeNull();
    expect(rememberedPrincipal(bearers[1])).not.toBeNull();
    expect(rememberedPrincipal(newest)).not.toBeNull();
  });
});
