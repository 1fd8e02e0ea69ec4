import type { Principal, RememberedKeys } from './credentials';
import type { IdempotencyScope } from '../../db/ledger/idempotency';
import type { DomainError } from '../../platform/errors';
import type { MeteredCall } from './metering';
import {
  createAuthorizedTransaction,
  parseTransaction,
  POSTING_ENDPOINT,
  POSTING_ROUTE,
  type AuthorizedPostingBatcher,
  type CreatedTransaction,
  type ParsedTransaction,
} from './transactions';

/**
 * The posting route's common case in one statement: a request whose key authenticated before in
 * this app (RememberedKeys), with a usable Idempotency-Key and a body that parses, is
 * metered and then posted together with the check of its key and the claim of its
 * Idempotency-Key (createAuthorizedTransaction). Every other request, and every one that
 * statement hands back with nothing written (key no longer admitted, Idempotency-Key already
 * taken, external_id exists), goes on to the general path (the route's guards, routes/operation.ts),
 * which gives the spec's answer in the order auth → meter → role → key header → claim → body; a
 * request metered here is not metered again, and the count of one whose key no longer passes is
 * taken back. The route (routes/transactions.ts) reads the request and answers; this module knows
 * no HTTP.
 */

/** What of a posting request the one-statement path reads. */
export interface PostingRequest {
  /** The Authorization header, if any. */
  authorization: string | undefined;
  /** The request's Idempotency-Key when it is usable (usableKeyOf), else null. */
  idempotencyKey: string | null;
  /** The parsed JSON body. */
  body: unknown;
}

/** A posting the one-statement path can take. */
export interface OneStatementPosting {
  principal: Principal;
  secretSha256: Buffer;
  key: string;
  parsed: ParsedTransaction;
}

/** The posting of a request the one-statement path can take, or null (the general path takes it). */
export function oneStatementPosting(
  keys: RememberedKeys,
  request: PostingRequest,
): OneStatementPosting | null {
  const known = keys.principalOf(request.authorization);
  const key = request.idempotencyKey;
  const { body } = request;
  if (!known || known.principal.role !== POSTING_ROUTE.role || key === null) return null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  try {
    return { ...known, key, parsed: parseTransaction(body, Date.now()) };
  } catch {
    return null;
  }
}

/** What the one-statement path is given besides the posting. */
export interface OneStatementCall {
  /** The meter's verdict on the call, already asked (the general path reads the same one). */
  metering: Promise<MeteredCall> | undefined;
  /** The request's hash, as its idempotency record keeps it (requestHashOf). */
  requestSha256: Buffer;
  /** Counts the posting by its outcome on this path (ledger_postings_total). */
  countPosting?: (path: 'one_statement', outcome: 'created' | 'refused' | 'handed_back') => void;
}

/**
 * Posted; refused (the refusal is final for its Idempotency-Key, which the edge settles with the
 * answer it renders); or handed back to the general path with nothing written: over quota (`metering`: the
 * general path authenticates first, so a key revoked since it was remembered gets its 401, then
 * gives this refusal), the key no longer passes (`credential`: forgotten, and the meter's count
 * taken back: not an authenticated call after all), the Idempotency-Key is taken (`key`), or the
 * external_id exists (`duplicate`).
 */
export type OneStatementOutcome =
  | { created: CreatedTransaction }
  | { refused: DomainError; idempotencyScope: IdempotencyScope }
  | { handedBack: 'metering' | 'credential' | 'key' | 'duplicate' };

/** The posting with the check of its key and the claim of its Idempotency-Key, in one statement. */
export async function postInOneStatement(
  deps: { postings: AuthorizedPostingBatcher; keys: RememberedKeys },
  posting: OneStatementPosting,
  call: OneStatementCall,
): Promise<OneStatementOutcome> {
  const { principal, secretSha256, key, parsed } = posting;
  let metered: MeteredCall | undefined;
  try {
    metered = await call.metering;
  } catch {
    return { handedBack: 'metering' };
  }
  const outcome = await createAuthorizedTransaction(deps.postings, principal.tenantId, parsed, {
    keyId: principal.keyId,
    secretSha256,
    idempotencyKey: key,
    requestSha256: call.requestSha256,
  });
  if ('created' in outcome) {
    call.countPosting?.('one_statement', 'created');
    return outcome;
  }
  call.countPosting?.('one_statement', 'refused' in outcome ? 'refused' : 'handed_back');
  if ('refused' in outcome) {
    const idempotencyScope = { tenantId: principal.tenantId, endpoint: POSTING_ENDPOINT, key };
    return { refused: outcome.refused, idempotencyScope };
  }
  if (outcome.fallback === 'credential') {
    deps.keys.forget(principal.keyId);
    await metered?.uncount().catch(() => undefined);
  }
  return { handedBack: outcome.fallback };
}
