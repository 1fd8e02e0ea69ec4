import { ulid } from 'ulid';
import { runAdmin } from '../../cli/runs';
import type { DatabasePool } from '../../db/pool';

/** A new runs tenant of the bench's own (`bench-<ulid>`) and a key of it holding `permissions`. */
export async function benchRunsTenant(
  pool: DatabasePool,
  permissions: string[],
): Promise<{ tenantId: string; key: string }> {
  const tenantId = `bench-${ulid().toLowerCase()}`;
  await runAdmin(['tenant', 'create', tenantId], pool);
  const { json } = await runAdmin(
    ['key', 'create', '--tenant', tenantId, '--permissions', permissions.join(',')],
    pool,
  );
  return { tenantId, key: (json as { key: string }).key };
}
