import type { DatabasePool } from '../../db/pool';
import { listAlertRules, type AlertRuleRow } from '../../db/quota/alert-rules';
import {
  plans,
  policies,
  readAsOneSnapshot,
  resources,
  type PolicyRow,
} from '../../db/quota/catalogue';
import {
  catalogueGeneration,
  generationsCurrent,
  loadSubject,
  raiseGenerations,
  redisGenerations,
  type Generations,
} from '../../db/quota/generations';
import {
  ALL_PARTITIONS,
  catalogueGenerationKey,
  subjectGenerationKey,
  subjectPartition,
  tenantPartition,
} from '../../db/quota/partitions';
import { findCredential, tenantCredentials, type CredentialRow } from '../../db/quota/keys';
import type { Queryable } from '../../db/quota/queryable';
import type { Redis } from '../../db/redis';
import type { GenerationGuard } from '../../db/quota/fast-state';
import { isBackendUnreachable } from '../../db/unreachable';
import { scopesOf, scopesOfTenantKeys } from './authz';

/**
 * What a request is judged by, kept in each API process's memory: a tenant's catalogue (its
 * status, keys and their scopes, resources, policies, plans, enabled alert rules) and each
 * subject's plan and overrides, each as Postgres had it at a generation (db/quota/generations.ts:
 * bumped by triggers in every transaction that changes them).
 *
 * A change binds the very next request on every process because a decision compares the
 * generations it decided with against the store it decides in, in the same step (the fast-mode
 * script against Redis's copy, a strict transaction against Postgres); a request that reads
 * nothing else (a catalogue read, a key's own routes) compares with Redis first (`verify`). A
 * moved generation reloads what moved and the request is judged again. The writer raises Redis's
 * copy after its commit (`announce`), and every reader that finds a newer one in Postgres raises
 * it too, so a copy Redis lost is repaired by the next decision. Backstops for a copy that stayed
 * behind (a writer that could not reach Redis, Redis restarted from an older file): everything
 * is dropped when the Redis connection comes back, and nothing is used past MAX_AGE_MS unread.
 */
const MAX_AGE_MS = 60_000;
/** Subjects kept per process (the oldest read goes first). */
const SUBJECTS_MAX = 100_000;

export type CatalogPolicy = PolicyRow & { resource: string };

export interface Credential {
  row: Omit<CredentialRow, 'secret_sha256_hex'>;
  secretSha256Hex: string;
  scopes: string[];
}

export interface TenantCatalogue {
  tenantId: string;
  generation: string;
  /** Resource ids by name (consume items name resources). */
  resourceIds: Map<string, string>;
  policies: Map<string, CatalogPolicy>;
  /** Each plan's policy ids. */
  planPolicies: Map<string, string[]>;
  enabledAlertRules: AlertRuleRow[];
  /** Every key of the tenant by key id (the public half of its secret). */
  credentials: Map<string, Credential>;
  loadedAtMs: number;
}

export interface SubjectEntry {
  generation: string;
  planId: string | null;
  overrides: Map<string, { limit_amount: string | null; enabled: boolean }>;
  loadedAtMs: number;
}

/** What one decision is judged by, and the generations it must find still current. */
export interface CatalogueView {
  tenantId: string;
  subject: string;
  catalogue: TenantCatalogue;
  entry: SubjectEntry;
  generations: Generations;
  /** Redis's copies of those generations and their values here (fast-mode scripts compare them). */
  guard: GenerationGuard;
}

/** Thrown by a decision that found a generation moved: reload and judge the request again. */
export class CatalogueMoved extends Error {
  constructor() {
    super('the catalogue changed since it was read');
  }
}

async function readCatalogue(pool: DatabasePool, tenantId: string): Promise<TenantCatalogue> {
  // One snapshot for all of it: a generation and the rows it counts.
  return pool.transaction(async (tx) => {
    await readAsOneSnapshot(tx);
    const generation = await catalogueGeneration(tx, tenantId);
    const resourceRows = await resources.list(tx, tenantId);
    const names = new Map(resourceRows.map((r) => [r.id, r.name]));
    const policyRows = await policies.list(tx, tenantId);
    const planRows = await plans.list(tx, tenantId);
    return {
      tenantId,
      generation,
      resourceIds: new Map(resourceRows.map((r) => [r.name, r.id])),
      policies: new Map(
        policyRows.map((p) => [p.id, { ...p, resource: names.get(p.resource_id)! }]),
      ),
      planPolicies: new Map(planRows.map((p) => [p.id, p.policy_ids])),
      enabledAlertRules: (await listAlertRules(tx, tenantId)).filter((r) => r.enabled),
      credentials: await readCredentials(tx, tenantId),
      loadedAtMs: Date.now(),
    };
  });
}

async function readCredentials(tx: Queryable, tenantId: string) {
  const scopes = await scopesOfTenantKeys(tx, tenantId);
  const rows = await tenantCredentials(tx, tenantId);
  return new Map(rows.map((row) => [row.key_id, credentialOf(row, scopes.get(row.id) ?? [])]));
}

function credentialOf(row: CredentialRow, scopes: string[]): Credential {
  const { secret_sha256_hex: secretSha256Hex, ...rest } = row;
  return { row: rest, secretSha256Hex, scopes };
}

async function readSubject(db: Queryable, tenantId: string, subject: string) {
  const row = await loadSubject(db, tenantId, subject);
  const overrides = new Map(row.overrides.map(({ policy_id, ...o }) => [policy_id, o]));
  return { generation: row.generation, planId: row.plan_id, overrides, loadedAtMs: Date.now() };
}

const fresh = (entry: { loadedAtMs: number } | undefined) =>
  entry !== undefined && Date.now() - entry.loadedAtMs < MAX_AGE_MS;

/** One load at a time per key: concurrent requests wait for the same read. */
function singleFlight<T>() {
  const pending = new Map<string, Promise<T>>();
  return (key: string, load: () => Promise<T>): Promise<T> => {
    let loading = pending.get(key);
    if (!loading) {
      loading = load().finally(() => pending.delete(key));
      pending.set(key, loading);
    }
    return loading;
  };
}

/** Every partition's copy of a tenant's catalogue generation, to raise to `generation`. */
const everyCopy = (tenantId: string, generation: string) =>
  ALL_PARTITIONS.map((p) => ({ key: catalogueGenerationKey(tenantId, p), generation }));

/** Raises Redis's copies to what Postgres said; Redis out of reach is the decision's to face. */
async function raiseQuietly(redis: Redis, generations: { key: string; generation: string }[]) {
  await raiseGenerations(redis, generations).catch((error: unknown) => {
    if (!isBackendUnreachable(error)) throw error;
  });
}

export function createCatalogueCache(deps: { pool: DatabasePool; redis: Redis }) {
  const catalogues = new Map<string, TenantCatalogue>();
  const subjects = new Map<string, SubjectEntry>();
  const keyTenants = new Map<string, string>();
  const loadCatalogue = singleFlight<TenantCatalogue>();
  const loadSubjectEntry = singleFlight<SubjectEntry>();
  const subjectKey = (tenantId: string, subject: string) => `${tenantId}\n${subject}`;

  // Redis came back (restarted, failed over, or this process was cut off): a change announced
  // meanwhile may be missing from its copy, so nothing read before is trusted.
  let connectedBefore = deps.redis.status === 'ready';
  deps.redis.on('ready', () => {
    if (connectedBefore) clear();
    connectedBefore = true;
  });

  function clear() {
    catalogues.clear();
    subjects.clear();
  }

  async function catalogue(tenantId: string): Promise<TenantCatalogue> {
    const cached = catalogues.get(tenantId);
    if (fresh(cached)) return cached!;
    return loadCatalogue(tenantId, async () => {
      const loaded = await readCatalogue(deps.pool, tenantId);
      // Until its grants are written (by a workflow, which tells no process) a tenant is read anew.
      const bootstrapped = [...loaded.credentials.values()].every(
        (c) => c.row.tenant_bootstrap_state === 'done',
      );
      if (bootstrapped) catalogues.set(tenantId, loaded);
      for (const keyId of loaded.credentials.keys()) keyTenants.set(keyId, tenantId);
      await raiseQuietly(deps.redis, everyCopy(tenantId, loaded.generation));
      return loaded;
    });
  }

  async function subjectEntry(tenantId: string, subject: string): Promise<SubjectEntry> {
    const key = subjectKey(tenantId, subject);
    const cached = subjects.get(key);
    if (fresh(cached)) return cached!;
    return loadSubjectEntry(key, async () => {
      const loaded = await readSubject(deps.pool, tenantId, subject);
      subjects.delete(key);
      if (subjects.size >= SUBJECTS_MAX) subjects.delete(subjects.keys().next().value!);
      subjects.set(key, loaded);
      const raised = {
        key: subjectGenerationKey(tenantId, subject),
        generation: loaded.generation,
      };
      await raiseQuietly(deps.redis, [raised]);
      return loaded;
    });
  }

  /** A key's credential: a tenant key's from its tenant's catalogue, an operator key's from Postgres. */
  async function credential(keyId: string): Promise<Credential | null> {
    const tenantId = keyTenants.get(keyId);
    const known = tenantId ? (await catalogue(tenantId)).credentials.get(keyId) : undefined;
    if (known) return known;
    const row = await findCredential(deps.pool, keyId);
    if (!row) return null;
    if (row.tenant_id === null) return credentialOf(row, await scopesOf(deps.pool, row));
    // A key made after the tenant's catalogue was read: read it again.
    catalogues.delete(row.tenant_id);
    return (await catalogue(row.tenant_id)).credentials.get(keyId) ?? null;
  }

  /** What a decision on a subject of a tenant is judged by. */
  async function view(tenantId: string, subject: string): Promise<CatalogueView> {
    const [tenant, entry] = await Promise.all([
      catalogue(tenantId),
      subjectEntry(tenantId, subject),
    ]);
    return {
      tenantId,
      subject,
      catalogue: tenant,
      entry,
      generations: { catalogue: tenant.generation, subject: entry.generation },
      guard: {
        keys: [
          catalogueGenerationKey(tenantId, subjectPartition(tenantId, subject)),
          subjectGenerationKey(tenantId, subject),
        ],
        expected: [tenant.generation, entry.generation],
      },
    };
  }

  /** The generations Redis holds for `keys`; Postgres's (`fromPostgres`) while it is out of reach. */
  async function storedGenerations(keys: string[], fromPostgres: () => Promise<string[]>) {
    return redisGenerations(deps.redis, keys).catch((error: unknown) => {
      if (!isBackendUnreachable(error)) throw error;
      return fromPostgres();
    });
  }

  function moved(moving: Pick<CatalogueView, 'tenantId' | 'subject'>): void {
    catalogues.delete(moving.tenantId);
    subjects.delete(subjectKey(moving.tenantId, moving.subject));
  }

  return {
    credential,
    view,

    /** A decision found a generation of `view` moved: both are read again before the next. */
    moved,

    /**
     * Whether `view`'s generations are still current (Redis's copies, or Postgres while Redis is
     * out of reach): a refusal judged from memory before any store was asked is checked so.
     */
    async stillCurrent(current: CatalogueView): Promise<boolean> {
      const { keys, expected } = current.guard;
      const held = await storedGenerations(keys, async () => [
        await catalogueGeneration(deps.pool, current.tenantId),
        (await loadSubject(deps.pool, current.tenantId, current.subject)).generation,
      ]);
      return held.every((generation, i) => generation === expected[i]);
    },

    /**
     * For a read that no decision checks (a subject's usage, a commit's extra): the view as
     * Postgres has it now (compared there, read again if it moved).
     */
    async currentView(tenantId: string, subject: string): Promise<CatalogueView> {
      const remembered = await view(tenantId, subject);
      if (await generationsCurrent(deps.pool, tenantId, subject, remembered.generations))
        return remembered;
      moved(remembered);
      return view(tenantId, subject);
    },

    /**
     * For a request that no decision checks: the catalogue of the key's tenant as it is now
     * (compared with Redis's copy of its generation, or with Postgres while Redis is out of reach).
     */
    async verifyKey(keyId: string): Promise<void> {
      const tenantId = keyTenants.get(keyId);
      const cached = tenantId && catalogues.get(tenantId);
      if (!cached) return;
      const [current] = await storedGenerations(
        [catalogueGenerationKey(cached.tenantId, tenantPartition(cached.tenantId))],
        async () => [await catalogueGeneration(deps.pool, cached.tenantId)],
      );
      if (current !== cached.generation) catalogues.delete(cached.tenantId);
    },
  };
}
export type CatalogueCache = ReturnType<typeof createCatalogueCache>;

/**
 * After a committed change of a tenant's catalogue (and of a subject's assignment or overrides):
 * Redis's copies of their generations raised to Postgres's, so the next decision of every process
 * finds them moved. Redis out of reach: the backstops of createCatalogueCache apply.
 */
export async function announceChange(
  deps: { pool: DatabasePool; redis: Redis },
  tenantId: string,
  subject?: string,
): Promise<void> {
  const raised = everyCopy(tenantId, await catalogueGeneration(deps.pool, tenantId));
  if (subject !== undefined) {
    const { generation } = await loadSubject(deps.pool, tenantId, subject);
    raised.push({ key: subjectGenerationKey(tenantId, subject), generation });
  }
  await raiseQuietly(deps.redis, raised);
}
