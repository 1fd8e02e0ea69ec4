/**
 * The scope catalogue: what a key may do. The spec names `assignments:write`; the rest follow
 * its `<area>:<read|write>` style. Each operation names the one scope it needs (OpenAPI
 * `x-required-scope`, and the 403's WWW-Authenticate). A write scope does not imply its read.
 */
export const TENANT_SCOPES = {
  'keys:read': 'list API keys of the tenant',
  'keys:write':
    'mint, patch, rotate and revoke API keys (only scopes and constraints the key holds)',
  'catalog:read': 'read resources, policies and plans',
  'catalog:write': 'create, change and delete resources, policies and plans',
  'assignments:read': "read subjects' assignments and overrides",
  'assignments:write': 'assign plans to subjects and set their overrides (bounded by plan_ids)',
  'usage:read':
    "read subjects' usage and entitlements, the usage summary and the consumption ledger",
  consume: 'consume, refund, reserve, commit and release; read reservations',
  check: 'check whether amounts would be admitted, consuming nothing',
  'audit:read': 'read the admin audit',
  'alerts:read': 'read alert rules and alert events',
  'alerts:write': 'create, change and delete alert rules',
  'webhooks:read': 'read webhook endpoints (never their secrets) and their deliveries',
  'webhooks:write': 'create, change, delete and test webhook endpoints',
} as const;

/** Scopes of operator keys only (a key without a tenant): tenant administration and jobs. */
export const OPERATOR_SCOPES = {
  'tenants:admin': 'create, read, change, suspend and bootstrap tenants',
  'ops:admin': 'run background jobs and list their runs',
  'payloads:codec':
    "decode and encode Temporal payloads through the codec endpoint (every tenant's workflow inputs, in clear)",
} as const;

export type TenantScope = keyof typeof TENANT_SCOPES;
export type OperatorScope = keyof typeof OPERATOR_SCOPES;
export type Scope = TenantScope | OperatorScope;

export const TENANT_SCOPE_NAMES = Object.keys(TENANT_SCOPES) as TenantScope[];
export const OPERATOR_SCOPE_NAMES = Object.keys(OPERATOR_SCOPES) as OperatorScope[];

export const isTenantScope = (scope: string): scope is TenantScope =>
  Object.hasOwn(TENANT_SCOPES, scope);

export const isOperatorScope = (scope: string): scope is OperatorScope =>
  Object.hasOwn(OPERATOR_SCOPES, scope);
