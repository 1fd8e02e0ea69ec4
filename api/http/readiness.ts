import type { Context } from 'koa';
import { checkAll, type BackendCheck } from '../../db/health';

/**
 * A readiness probe's answer, the same for every API that has one (quota and runs /readyz): 200
 * with `ready` when every backend answers, else 503 `unavailable`; the body names each backend's
 * status and the release.
 */
export async function answerReadiness(
  ctx: Context,
  backends: Record<string, BackendCheck>,
  version: string,
): Promise<void> {
  const statuses = await checkAll(backends);
  const ready = Object.values(statuses).every((status) => status === 'up');
  ctx.status = ready ? 200 : 503;
  ctx.body = { status: ready ? 'ready' : 'unavailable', ...statuses, version };
}
