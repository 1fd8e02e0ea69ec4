import { randomBytes, randomUUID } from 'node:crypto';
import {
  judgeCredential,
  RememberedKeys,
  REMEMBERED_KEYS_MAX,
  sha256,
  tokenOf,
} from '../../../services/ledger/credentials';

/** A key that authenticates, remembered as authenticate() remembers it; its bearer header. */
function authenticated(keys: RememberedKeys): string {
  const keyId = randomUUID();
  const secret = randomBytes(32).toString('base64url');
  const secretSha256 = sha256(secret);
  const principal = judgeCredential(
    {
      key_id: keyId,
      tenant_id: randomUUID(),
      role: 'ledger_poster',
      secret_sha256: secretSha256,
      expired: false,
      revoked: false,
      tenant_status: 'active',
      parent_id: null,
      parent_status: null,
    },
    secretSha256,
  );
  keys.remember(secretSha256, principal);
  return `Bearer ${tokenOf(keyId, secret)}`;
}

describe('remembered keys', () => {
  it('when a key authenticated, then its bearer is recognised, and with another secret it is not', () => {
    const keys = new RememberedKeys();
    const bearer = authenticated(keys);
    expect(keys.principalOf(bearer)?.principal.role).toBe('ledger_poster');
    const forged = bearer.slice(0, -3) + (bearer.endsWith('AAA') ? 'BBB' : 'AAA');
    expect(keys.principalOf(forged)).toBeNull();
  });

  it('when a key is forgotten, or another app learnt it, then its bearer is not recognised', () => {
    const keys = new RememberedKeys();
    const bearer = authenticated(keys);
    expect(new RememberedKeys().principalOf(bearer)).toBeNull();
    keys.forget(keys.principalOf(bearer)!.principal.keyId);
    expect(keys.principalOf(bearer)).toBeNull();
  });

  it(`when ${REMEMBERED_KEYS_MAX} keys are remembered all stay; one more forgets the oldest only`, () => {
    const keys = new RememberedKeys();
    const bearers = Array.from({ length: REMEMBERED_KEYS_MAX }, () => authenticated(keys));
    expect(bearers.every((b) => keys.principalOf(b) !== null)).toBe(true);
    const newest = authenticated(keys);
    expect(keys.principalOf(bearers[0])).toBeNull();
    expect(keys.principalOf(bearers[1])).not.toBeNull();
    expect(keys.principalOf(newest)).not.toBeNull();
  });
});
