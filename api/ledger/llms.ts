/** A concise guide for agents, served at /llms.txt. */
export const LLMS_TXT = `# Ledger API

Double-entry ledger over HTTP. Contract: GET /openapi.json (OpenAPI 3.1).

## Auth
- Every request except /healthz, /ping, /openapi.json and /llms.txt: \`Authorization: Bearer lk_<key id>_<secret>\`.
- One role per key: ledger_admin (asset types, account writes), ledger_poster (transactions, commit, void),
  ledger_reader (all reads), ledger_partner (sub-tenants and their keys; never a client's ledger data).
- 401 UNAUTHENTICATED / CREDENTIAL_EXPIRED, 403 FORBIDDEN / TENANT_SUSPENDED. Another tenant's ids answer 404.

## Idempotency
- Every POST, PATCH and DELETE needs \`Idempotency-Key\` (1-255 chars), scoped per tenant and endpoint.
- Same key + same body: the original status and body again (header Idempotent-Replayed: true).
- Same key + different body: 422 IDEMPOTENCY_KEY_MISMATCH. Concurrent duplicate: 409 IDEMPOTENCY_IN_FLIGHT + Retry-After,
  or, for a posting that finishes meanwhile, its replay.
- external_id is a second guard: a repeat under a new key is 409 DUPLICATE_TRANSACTION.

## Money
- Amounts are decimal strings at the asset's scale ("12.34"); fields ending _minor are integer minor units as strings.
- Never send JSON numbers for money. More decimals than the scale: 422 INVALID_AMOUNT_SCALE.
- balance_floor: omitted = 0, null = unbounded, "-50.00" = overdraft line. Async accounts have no floor.
- Timestamps need an explicit offset or Z. In a query string encode + as %2B (or use Z), else 422 INVALID_AS_OF.

## Posting
- POST /v1/transactions {entries:[{account_id, direction: debit|credit, amount}], pending?, expires_at?, effective_at?, external_id?, description?, metadata?}
- 2-100 entries; debits = credits per asset. Floors are tested on the net per account.
- pending: true holds the contra side until POST /v1/transactions/{id}/commit or /void, or until expires_at (then 410 HOLD_EXPIRED on commit).
- No listing of transactions: keep the transaction_id you get back.
- Reads: /v1/accounts/{id}/balance, /balance-as-of?at=...&basis=effective|recorded, /entries?state=...&limit=&cursor= (newest first, next_cursor).

## Retry rule
- Any 503, any 429 and any 409 carrying Retry-After are transient: wait Retry-After seconds and retry with the SAME Idempotency-Key.
- Any 422 is final: fix the request. 409 without Retry-After (e.g. INVALID_TRANSACTION_STATE, closed account) is final.

## Error codes
Envelope: {"error": {"code", "message", "details"?}}; branch on code.
400 MISSING_IDEMPOTENCY_KEY; 401 UNAUTHENTICATED, CREDENTIAL_EXPIRED; 403 FORBIDDEN, TENANT_SUSPENDED, TENANT_NOT_PROVISIONED, TENANT_CONTEXT_MISMATCH;
404 ACCOUNT_NOT_FOUND, TRANSACTION_NOT_FOUND, ASSET_TYPE_NOT_FOUND, SUB_TENANT_NOT_FOUND, KEY_NOT_FOUND, NOT_FOUND; 405 METHOD_NOT_ALLOWED;
409 ACCOUNT_NOT_ACTIVE, INVALID_TRANSACTION_STATE, DUPLICATE_TRANSACTION, LOCK_TIMEOUT, CONFLICT_RETRY, CLOSE_REQUIRES_ZERO_BALANCE,
ASSET_TYPE_SUPERSEDED, IDEMPOTENCY_IN_FLIGHT, POSTING_FROZEN (operator froze posting of the tenant or an asset type: wait
Retry-After, retry with the same key), APPEND_ONLY_VIOLATION, IMMUTABLE_VIOLATION, TENANT_CONTEXT_REQUIRED; 410 HOLD_EXPIRED; 413 PAYLOAD_TOO_LARGE (64 KiB edge, 1 MiB app);
422 UNBALANCED_TRANSACTION, INSUFFICIENT_AVAILABLE, INVALID_AMOUNT, INVALID_AMOUNT_SCALE, INVALID_FLOOR, INVALID_EXPIRES_AT,
INVALID_EFFECTIVE_AT, INVALID_AS_OF, INVALID_STATE, IDEMPOTENCY_KEY_MISMATCH, ENTRY_COUNT_OUT_OF_RANGE, INVALID_ASSET_TYPE,
IMMUTABLE_FIELD, INVALID_TENANT, INVALID_KEY, REFERENCE_NOT_FOUND, CONSTRAINT_VIOLATION, INVALID_INPUT, INVALID_ACCOUNT_ID, INVALID_METADATA,
INVALID_ACCOUNT, INVALID_DESCRIPTION, INVALID_EXTERNAL_ID, INVALID_JSON_DEPTH, INVALID_REQUEST;
429 RATE_LIMITED, QUOTA_EXCEEDED; 500 INTERNAL_ERROR; 502 REVOCATION_FAILED (a key revocation refused: nothing changed, the key still works);
503 AUTHZ_UNAVAILABLE (key store unreachable), AUTHZ_CREDENTIAL_REJECTED (the service's own database credential is refused;
/healthz then says auth_client_credential: rejected), STATEMENT_TIMEOUT, SERVICE_UNAVAILABLE (the database or Redis is
briefly out of reach, e.g. restarting; nothing was written, or the same key replays what was).
A request without a body where one is needed: 422 INVALID_REQUEST, and its Idempotency-Key stays free.
A method a path does not allow: 405 METHOD_NOT_ALLOWED with Allow.

## Limits
10 req/s burst 20 per address; metadata 16 KiB canonical JSON; description 1024 chars; names, labels, external_id 255;
JSON nesting 64; page limit 1000; asset scale 0-12; sub-tenant depth 1.
`;
