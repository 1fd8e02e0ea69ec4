import type { DatabasePool } from '../../db/pool';
import { createCredentialBatcher, type CredentialBatcher } from './credentials';
import {
  createAuthorizedPostingBatcher,
  createPostingBatcher,
  type AuthorizedPostingBatcher,
  type PostingBatcher,
} from './transactions';

/**
 * A ledger app's batchers (group commit, platform/batching.ts), made with the app for its own
 * pool: so batches never mix two pools, and two apps in one process (tests) never share a batch.
 * The app hands them to the routes that post and authenticate, and drains them when it stops.
 */
export interface LedgerBatchers {
  /** Postings of the general path (createParsedTransaction). */
  postings: PostingBatcher;
  /** Postings of the one-statement path, with their key's check and claim (postInOneStatement). */
  authorizedPostings: AuthorizedPostingBatcher;
  /** Key lookups with their Idempotency-Key claims (authenticateAndClaim). */
  credentials: CredentialBatcher;
  /** Resolves when every call submitted to them has its answer. */
  drain(): Promise<void>;
}

export function createLedgerBatchers(pool: DatabasePool): LedgerBatchers {
  const postings = createPostingBatcher(pool);
  const authorizedPostings = createAuthorizedPostingBatcher(pool);
  const credentials = createCredentialBatcher(pool);
  return {
    postings,
    authorizedPostings,
    credentials,
    drain: async () => {
      await Promise.all([postings.drain(), authorizedPostings.drain(), credentials.drain()]);
    },
  };
}
