import type Router from '@koa/router';
import type { Context } from 'koa';
import { principalOf } from '../auth';
import {
  deleteTemplate,
  getTemplate,
  listTenantTemplates,
  patchTemplate,
  registerTemplate,
  runTemplate,
  type TemplateCreate,
  type TemplatePatch,
  type TemplateRunBody,
} from '../../../services/runs/templates/service';
import { mountOperation, validated, type RunsDeps, type Starters } from './operation';
import Joi from 'joi';
import { boundedText } from '../../../platform/text';
import { runsError } from '../../../services/runs/errors';
import { offset, pageLimit, runName, runTags, utcInstant } from '../../../services/runs/schemas';
import { ok, done, runsOperation, type RunsOperation } from './operation';
import { INT_MAX } from '../../../services/runs/tenant';
import { InlineWebhook } from '../../../services/runs/webhooks/inline';
import { TEMPLATE_DEFINITION_MAX_BYTES } from '../../../services/runs/templates/definition';
import {
  Template,
  TemplateList,
  TemplateRunAccepted,
} from '../../../services/runs/templates/models';
import {
  PARAM_DESCRIPTION_MAX_LENGTH,
  PARAM_ENUM_VALUE_MAX_LENGTH,
  PARAM_ENUM_VALUES_MAX,
  PARAM_NAME_PATTERN,
  PARAM_PATTERN_MAX_LENGTH,
  PARAM_VALUE_MAX_LENGTH,
  TEMPLATE_PARAMS_MAX,
  compilePattern,
  type TemplateParam,
} from '../../../services/runs/templates/params';
import {
  TEMPLATE_NAME_PATTERN,
  TEMPLATE_VERSIONS_MAX,
} from '../../../services/runs/templates/service';

export const TEMPLATE_DESCRIPTION_MAX_LENGTH = 1024;
export const TEMPLATES_LIST_LIMIT_DEFAULT = 50;
export const TEMPLATES_LIST_LIMIT_MAX = 1000;
/** A `{ref}` longer than this is no id and no name: 404 as any other. */
const TEMPLATE_REF_MAX_LENGTH = 128;

const templateName = () =>
  Joi.string()
    .pattern(TEMPLATE_NAME_PATTERN)
    .description(
      'Unique among the tenant’s templates not deleted (409 template_name_taken); a deleted template frees its name.',
    );
const templateDescription = () => boundedText(TEMPLATE_DESCRIPTION_MAX_LENGTH).allow('', null);
const paramValue = () => boundedText(PARAM_VALUE_MAX_LENGTH).allow('');

const paramPattern = () =>
  boundedText(PARAM_PATTERN_MAX_LENGTH, { min: 1 })
    .custom((value: string, helpers) =>
      compilePattern(value)
        ? value
        : helpers.message({
            custom: '{{#label}} must be a valid regular expression (ECMAScript, Unicode mode)',
          }),
    )
    .description(
      'A string parameter’s rule: an ECMAScript regular expression (Unicode mode, 422 when it does not compile) that must match the whole value. Matches run under a budget of 100 ms per request: a value whose match takes longer is refused.',
    );

/** What the custom rule of a declaration enforces, stated once for the JSON Schema. */
const DECLARATION_RULES = {
  allOf: [
    {
      if: { properties: { type: { const: 'enum' } }, required: ['type'] },
      then: { required: ['enum'], properties: { enum: { type: 'array' }, pattern: false } },
      else: { properties: { enum: false } },
    },
    {
      if: { properties: { required: { const: true } }, required: ['required'] },
      then: { properties: { default: false } },
    },
    {
      if: { properties: { secret: { const: true } }, required: ['secret'] },
      then: { properties: { default: false } },
    },
  ],
};

/** A declaration's rules between its fields (the type's own field, no default where meaningless). */
function declarationProblem(param: TemplateParam): string | null {
  if (param.type === 'enum' && param.enum === undefined)
    return '{{#label}}.enum is required for an enum parameter';
  if (param.type === 'enum' && param.pattern !== undefined)
    return '{{#label}}.pattern is allowed only for a string parameter';
  if (param.type === 'string' && param.enum !== undefined)
    return '{{#label}}.enum is allowed only for an enum parameter';
  if (param.required && param.default !== undefined)
    return '{{#label}}.default is not allowed on a required parameter';
  if (param.secret && param.default !== undefined)
    return '{{#label}}.default is not allowed on a secret parameter (its value is given at each run)';
  return null;
}

const TemplateParamDeclaration = Joi.object({
  name: Joi.string()
    .pattern(PARAM_NAME_PATTERN)
    .required()
    .description('Unique among the template’s parameters; named in a placeholder `${{ name }}`.'),
  type: Joi.string().valid('string', 'enum').required(),
  required: Joi.boolean()
    .default(false)
    .description('A run without its value is 422 `missing_template_param:<name>`.'),
  secret: Joi.boolean()
    .default(false)
    .description(
      'Its value is stored encrypted, never in clear, and never shown; it may stand only in node env values (422 `secret_param_outside_env:<name>`); it takes no default.',
    ),
  default: paramValue().description(
    'For an optional parameter that is not secret; must meet the parameter’s own rule (422 `invalid_template_param:<name>`). An optional parameter without a value or default is substituted as the empty string.',
  ),
  pattern: paramPattern(),
  enum: Joi.array()
    .items(boundedText(PARAM_ENUM_VALUE_MAX_LENGTH).allow(''))
    .min(1)
    .max(PARAM_ENUM_VALUES_MAX)
    .unique()
    .description('An enum parameter’s values (required for it): its value must be one of them.'),
  description: boundedText(PARAM_DESCRIPTION_MAX_LENGTH).allow('', null),
})
  .unknown(false)
  .custom((param: TemplateParam, helpers) => {
    const problem = declarationProblem(param);
    return problem === null ? param : helpers.message({ custom: problem });
  })
  .meta({ 'x-schema': DECLARATION_RULES })
  .id('TemplateParam');

const templateParams = () =>
  Joi.array()
    .items(TemplateParamDeclaration)
    .max(TEMPLATE_PARAMS_MAX)
    .unique('name')
    .description(`At most ${TEMPLATE_PARAMS_MAX}, each name once.`);

const templateDefinition = () =>
  Joi.object()
    .unknown(true)
    .description(
      `A workflow submit body (WorkflowSubmitRequest) without \`webhook\`, with \`\${{ name }}\` placeholders in any of its strings (not in object keys); at most ${TEMPLATE_DEFINITION_MAX_BYTES} bytes of JSON (422 template_too_large). Judged by the submit schema at once, except the values that hold a placeholder, judged at run once substituted (422 \`invalid_template_definition: <joi message>\`); the graph, the images and the node count are judged at run, as a submit's.`,
    );

const TemplateCreateRequest = Joi.object({
  name: templateName().allow(null).default(null),
  description: templateDescription().default(null),
  params: templateParams().default([]),
  definition: templateDefinition().required(),
})
  .required()
  .unknown(false)
  .id('TemplateCreateRequest');

const TemplatePatchRequest = Joi.object({
  name: templateName().allow(null).description('A new name; null clears it.'),
  description: templateDescription(),
  params: templateParams().description(
    'Replaces the declarations: publishes a version (with the latest definition unless one is given).',
  ),
  definition: templateDefinition().description(
    'Replaces the definition: publishes a version (with the latest params unless they are given).',
  ),
})
  .min(1)
  .required()
  .unknown(false)
  .id('TemplatePatchRequest');

/** The parameter values of a run (or of a trigger's runs). */
export const paramValues = () =>
  Joi.object()
    .pattern(/^/, paramValue())
    .max(TEMPLATE_PARAMS_MAX)
    .description(
      'One string per parameter, at most 4096 characters. A name not declared: 422 `unknown_template_param:<name>`; a required one missing: 422 `missing_template_param:<name>`; a value not in the enum, not matching the pattern whole, or holding `${{`: 422 `invalid_template_param:<name>`.',
    );

/** A pinned version of a template. */
export const templateVersion = () =>
  Joi.number()
    .integer()
    .min(1)
    .max(INT_MAX)
    .description('Pins a version (404 template_version_not_found); default the latest.');

const TemplateRunRequest = Joi.object({
  params: paramValues().default({}),
  version: templateVersion(),
  name: runName().description("Replaces the definition's workflow name (null clears it)."),
  tags: runTags().description("Added to the definition's tags."),
  scheduled_start: utcInstant()
    .allow(null)
    .default(null)
    .description('Defers the whole graph; a past instant is clamped to now.'),
  webhook: InlineWebhook,
})
  .required()
  .unknown(false)
  .description('Unknown fields are refused (422), in `webhook` too.')
  .id('TemplateRunRequest');

export const refParams = Joi.object({
  ref: Joi.string()
    .max(TEMPLATE_REF_MAX_LENGTH)
    .required()
    .error(() => runsError('template_not_found'))
    .description('A template_id (a ULID, any case) or a name.'),
});

export const TEMPLATE_NOT_FOUND =
  "`template_not_found`: no template of that id or name, deleted, or another tenant's.";

/** The refusals every template operation states in its own words. */
const TEMPLATE_REFUSALS = {
  '400': 'Malformed JSON, or an unknown query parameter (the detail names the supported set).',
  '403':
    "`permission_denied`: the key lacks the operation's svc_template_* permission (run permissions grant no template route).",
  '429': '`rate_limited` (with `Retry-After`).',
  '503': 'A backend is briefly unreachable (Postgres or Redis restarting); with Retry-After.',
} as const;

type TemplateOperation = Omit<RunsOperation, 'permission'> & {
  permission: 'svc_template_write' | 'svc_template_read' | 'svc_template_run';
};

const templateOperation = (op: TemplateOperation) =>
  runsOperation({
    ...op,
    refusals: {
      ...TEMPLATE_REFUSALS,
      ...(op.request?.params ? { '404': TEMPLATE_NOT_FOUND } : {}),
      ...op.refusals,
    },
  });

const DECLARATION_422 =
  'Schema mismatch (joi message): an unknown field, a name off its pattern, a parameter’s pattern that does not compile, an enum parameter without enum, a default on a required or secret parameter, ...; `invalid_template_param:<name>` (a default that fails its own rule); `invalid_template_definition: <joi message>` (the definition against the workflow submit schema, values holding a placeholder aside); `unknown_template_param:<name>` (a placeholder naming no parameter); `secret_param_outside_env:<name>` (a secret parameter outside node env values); `template_too_large` (a definition over 256 KiB of JSON).';

/** The template operations of the runs service (the spec's Templates table, triggers aside). */
export const TEMPLATE_OPERATIONS = {
  templateCreate: templateOperation({
    method: 'post',
    path: '/api/v1/templates',
    operationId: 'createTemplate',
    routeName: 'template.create',
    permission: 'svc_template_write',
    summary: 'Register a workflow template',
    description:
      "Stored at version 1; answers the template as GET does (its definition redacted). Counted against max_templates (the tenant's templates not deleted).",
    request: { body: TemplateCreateRequest },
    responses: { '201': ok(Template, 'Registered') },
    refusals: {
      '409': '`template_name_taken`: a template of the tenant (not deleted) has the name.',
      '422': DECLARATION_422,
      '429':
        '`template_quota_exceeded` (the tenant has max_templates templates), or `rate_limited` (with `Retry-After`).',
    },
  }),
  templateList: templateOperation({
    method: 'get',
    path: '/api/v1/templates',
    operationId: 'listTemplates',
    routeName: 'template.list',
    permission: 'svc_template_read',
    summary: 'List templates, newest first',
    request: {
      query: Joi.object({
        limit: pageLimit(TEMPLATES_LIST_LIMIT_MAX, TEMPLATES_LIST_LIMIT_DEFAULT),
        offset: offset().default(0),
      }),
    },
    responses: { '200': ok(TemplateList) },
  }),
  templateGet: templateOperation({
    method: 'get',
    path: '/api/v1/templates/{ref}',
    operationId: 'getTemplate',
    routeName: 'template.get',
    permission: 'svc_template_read',
    summary: 'A template by id or name, at its latest version or the one asked for',
    description:
      'The definition is redacted (every node env value `[redacted]`); a secret parameter is marked and has no default.',
    request: {
      params: refParams,
      query: Joi.object({
        version: Joi.number()
          .integer()
          .min(1)
          .max(INT_MAX)
          .description('A version to show (404 template_version_not_found); default the latest.'),
      }),
    },
    responses: { '200': ok(Template) },
    refusals: {
      '404': `${TEMPLATE_NOT_FOUND} \`template_version_not_found\`: it has no such version.`,
    },
  }),
  templatePatch: templateOperation({
    method: 'patch',
    path: '/api/v1/templates/{ref}',
    operationId: 'updateTemplate',
    routeName: 'template.update',
    permission: 'svc_template_write',
    summary: 'Rename or describe a template; new params or definition publish a version',
    description: `At least one field. name and description change the template (no new version); params or definition (or both) publish the next version, the part not given carried over from the latest and judged with it. At most ${TEMPLATE_VERSIONS_MAX} versions per template. Answers the template at its latest version.`,
    request: { params: refParams, body: TemplatePatchRequest },
    responses: { '200': ok(Template) },
    refusals: {
      '409': `\`template_name_taken\` (the new name is another live template's), or \`template_version_limit\` (the template has ${TEMPLATE_VERSIONS_MAX} versions: register a new one).`,
      '422': DECLARATION_422,
    },
  }),
  templateDelete: templateOperation({
    method: 'delete',
    path: '/api/v1/templates/{ref}',
    operationId: 'deleteTemplate',
    routeName: 'template.delete',
    permission: 'svc_template_write',
    summary: 'Delete a template',
    description:
      'Frees its name and its max_templates slot; it is found and listed no more. Workflows launched from it go on (their template_id still names it).',
    request: { params: refParams },
    responses: { '204': done('Deleted') },
  }),
  templateRun: templateOperation({
    method: 'post',
    path: '/api/v1/templates/{ref}/run',
    operationId: 'runTemplate',
    routeName: 'template.run',
    permission: 'svc_template_run',
    summary: 'Run a template: a workflow from its definition and the parameters given',
    description:
      "Needs svc_template_run and svc_workflow_submit. The parameters are resolved, the definition substituted and judged as a workflow submit body, then submitted by the workflow submit's own path (graph, images, allowlist, clamping, metering, quotas), all before anything is stored: a refused call starts nothing. A secret parameter's value is stored encrypted with the workflow (its placeholder stays in the node's env); the workflow lists with template_id.",
    request: { params: refParams, body: TemplateRunRequest },
    responses: { '202': ok(TemplateRunAccepted, 'Accepted') },
    extensions: { 'x-permissions': ['svc_template_run', 'svc_workflow_submit'] },
    refusals: {
      '400':
        'Malformed JSON, an unknown query parameter; as a workflow submit: `invalid_graph`, `invalid_image:<ref>`, `too_many_nodes`, `invalid_webhook_url`, `unknown_event_type`.',
      '403':
        "`permission_denied` (the key lacks svc_template_run or svc_workflow_submit), or `image_not_allowed` (a container node's image is not on the key's tier allowlist).",
      '404': `${TEMPLATE_NOT_FOUND} \`template_version_not_found\`: the pinned version does not exist.`,
      '422':
        'Schema mismatch (joi message: an unknown field, a value over 4096 characters, ...); `unknown_template_param:<name>`, `missing_template_param:<name>`, `invalid_template_param:<name>`; `invalid_template_definition: <joi message>` (the substituted definition against the workflow submit schema); `template_too_large` (over 1 MiB of JSON once substituted).',
      '429':
        '`workflow_quota_exceeded`, `daily_quota_exceeded`, `metered_quota_exceeded` (as a workflow submit), or `rate_limited` (with `Retry-After`).',
      '503':
        '`secrets_unavailable`: the definition uses a secret parameter and the service has no RUNS_SECRETS_KEY; or a backend is briefly unreachable (with Retry-After).',
    },
  }),
} satisfies Record<string, RunsOperation>;

/** The template routes (templates/): register, reads, PATCH, DELETE, run. */
export function mountTemplateRoutes(router: Router, deps: RunsDeps, starters: Starters): void {
  const ops = TEMPLATE_OPERATIONS;
  const tenantOf = (ctx: Context) => principalOf(ctx).tenantId;
  const refOf = (ctx: Context) => validated<{ ref: string }>(ctx, 'params').ref;
  mountOperation(router, ops.templateCreate, async (ctx) => {
    const body = validated<TemplateCreate>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await registerTemplate(deps, principalOf(ctx), body);
  });
  mountOperation(router, ops.templateList, async (ctx) => {
    ctx.body = await listTenantTemplates(deps, tenantOf(ctx), validated(ctx, 'query'));
  });
  mountOperation(router, ops.templateGet, async (ctx) => {
    const { version } = validated<{ version?: number }>(ctx, 'query');
    ctx.body = await getTemplate(deps, tenantOf(ctx), refOf(ctx), version);
  });
  mountOperation(router, ops.templatePatch, async (ctx) => {
    const patch = validated<TemplatePatch>(ctx, 'body');
    ctx.body = await patchTemplate(deps, principalOf(ctx), refOf(ctx), patch);
  });
  mountOperation(router, ops.templateDelete, async (ctx) => {
    await deleteTemplate(deps, principalOf(ctx), refOf(ctx));
    ctx.status = 204;
  });
  mountOperation(
    router,
    ops.templateRun,
    async (ctx) => {
      const body = validated<TemplateRunBody>(ctx, 'body');
      ctx.status = 202;
      ctx.body = await runTemplate(deps, starters.dags, principalOf(ctx), refOf(ctx), body);
    },
    // The spec: a run needs svc_workflow_submit too (it is a workflow submit).
    ['svc_workflow_submit'],
  );
}
