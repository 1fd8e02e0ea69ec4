import { randomUUID } from 'node:crypto';
import type { Credential } from '../../../db/ledger/tenants';
import { judgeCredential, sha256 } from '../../../services/ledger/credentials';
import { LEDGER_ERRORS, type LedgerErrorCode } from '../../../services/ledger/errors';

const SECRET = 's'.repeat(43);

const credential = (changes: Partial<Credential> = {}): Credential => ({
  key_id: randomUUID(),
  tenant_id: randomUUID(),
  role: 'ledger_reader',
  secret_sha256: sha256(SECRET),
  expired: false,
  revoked: false,
  tenant_status: 'active',
  parent_id: null,
  parent_status: null,
  ...changes,
});

/** The code judgeCredential refuses with, or 'admitted'. */
function verdict(stored: Credential | null, secret = SECRET): string {
  try {
    judgeCredential(stored, sha256(secret));
    return 'admitted';
  } catch (error) {
    const { code } = error as { code: LedgerErrorCode };
    return `${LEDGER_ERRORS[code].status} ${code}`;
  }
}

describe("judgeCredential: the spec's order of credential refusals", () => {
  it('when a stored key is judged, then unknown, wrong secret and revoked are 401 UNAUTHENTICATED before expiry (401 CREDENTIAL_EXPIRED), a key whose tenant row is missing is 403 TENANT_NOT_PROVISIONED, a suspended tenant or parent 403 TENANT_SUSPENDED', () => {
    expect(verdict(null)).toBe('401 UNAUTHENTICATED');
    expect(verdict(credential(), 'x'.repeat(43))).toBe('401 UNAUTHENTICATED');
    expect(verdict(credential({ revoked: true, expired: true }))).toBe('401 UNAUTHENTICATED');
    expect(verdict(credential({ expired: true, tenant_status: null }))).toBe(
      '401 CREDENTIAL_EXPIRED',
    );
    // The key store's join found no tenant for the key (the foreign key makes it a backstop).
    expect(verdict(credential({ tenant_status: null }))).toBe('403 TENANT_NOT_PROVISIONED');
    expect(verdict(credential({ tenant_status: 'suspended' }))).toBe('403 TENANT_SUSPENDED');
    expect(verdict(credential({ parent_id: randomUUID(), parent_status: 'suspended' }))).toBe(
      '403 TENANT_SUSPENDED',
    );
    expect(verdict(credential({ parent_id: randomUUID(), parent_status: 'active' }))).toBe(
      'admitted',
    );
  });
});
