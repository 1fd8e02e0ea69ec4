import type Router from '@koa/router';
import Joi from 'joi';
import type { PlatformDeps } from '../../../platform/deps';
import { selfCheckWorkflowId } from '../../../contracts/runs/self-check';
import { mount } from '../../http/contract';
import { privateNetworkOnly } from '../../http/private-network';
import { SelfCheck } from '../../../services/runs/models';
import { SELF_CHECK_TIMEOUT_SECONDS_MAX } from '../../../services/runs/schemas';
import {
  getSelfCheck,
  startSelfCheck,
  type SelfCheckRequest as SelfCheckStart,
} from '../../../services/runs/self-checks';
import { ok, runsOperation, validated, type RunsOperation } from './operation';

const SelfCheckRequest = Joi.object({
  image: Joi.string()
    .max(512)
    .required()
    .description("An image of the platform's own registry (else 400 image_not_in_local_registry)."),
  command: Joi.array().items(Joi.string().max(4096)).max(64).default([]),
  timeout_seconds: Joi.number().integer().min(1).max(SELF_CHECK_TIMEOUT_SECONDS_MAX).default(60),
}).id('SelfCheckRequest');

/** An operator's diagnostics (no key; private networks only). */
export const SELF_CHECK_OPERATIONS = {
  selfCheckStart: runsOperation({
    method: 'post',
    path: '/api/v1/self-checks',
    operationId: 'startSelfCheck',
    summary: 'Start a platform self-check (private networks only)',
    description:
      "An operator's diagnostic: API → workflow self-check/<check_id> → Postgres and a container of the local registry on a worker host. No key; refused 403 to a public address.",
    request: { body: SelfCheckRequest },
    responses: { '202': ok(SelfCheck, 'Started') },
    refusals: {
      '400': '`image_not_in_local_registry`, or malformed JSON.',
      '403': 'Not a private address.',
      '413': true,
      '415': true,
      '422': true,
      '503': '`workflow engine unavailable`: the workflow could not be started; nothing is kept.',
    },
  }),
  selfCheckGet: runsOperation({
    method: 'get',
    path: '/api/v1/self-checks/{check_id}',
    operationId: 'getSelfCheck',
    summary: 'A self-check (private networks only)',
    request: { params: Joi.object({ check_id: Joi.string().required() }) },
    responses: { '200': ok(SelfCheck) },
    refusals: { '403': 'Not a private address.', '404': '`self-check not found`' },
  }),
} satisfies Record<string, RunsOperation>;

function presentSelfCheck(row: Awaited<ReturnType<typeof getSelfCheck>>) {
  return { ...row, workflow_id: selfCheckWorkflowId(row.check_id) };
}

/** Self-checks run a container on a worker host: an operator diagnostic, not a tenant API. */
export function mountSelfCheckRoutes(router: Router, deps: PlatformDeps): void {
  const ops = SELF_CHECK_OPERATIONS;
  const operatorOnly = privateNetworkOnly('self-checks');
  mount(router, ops.selfCheckStart, [operatorOnly], async (ctx) => {
    const body = validated<{ image: string; command: string[]; timeout_seconds: number }>(
      ctx,
      'body',
    );
    const request: SelfCheckStart = {
      image: body.image,
      command: body.command,
      timeoutSeconds: body.timeout_seconds,
    };
    ctx.status = 202;
    ctx.body = presentSelfCheck(await startSelfCheck(deps, request));
  });
  mount(router, ops.selfCheckGet, [operatorOnly], async (ctx) => {
    const { check_id } = validated<{ check_id: string }>(ctx, 'params');
    ctx.body = presentSelfCheck(await getSelfCheck(deps, check_id));
  });
}
