import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { sql } from '../../../db/pool';
import { runAdmin } from '../../../cli/runs';
import { openApiDocument } from '../../../api/runs/openapi';
import { TEMPLATE_VERSIONS_MAX } from '../../../services/runs/templates/service';
import { createTemporalClient } from '../../../platform/temporal';
import { decryptWorkflowSecret } from '../../../platform/secrets';
import { dagWorkflowId } from '../../../contracts/runs/dag';
import { startTestService, type TestService } from '../../support/services';
import { dagClient, shNode } from './dag-support';
import { runsConformance } from './conformance';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from './support';

const TEMPLATE_PERMISSIONS =
  'svc_template_write,svc_template_read,svc_template_run,svc_workflow_submit,svc_workflow_read,svc_tenant_admin,svc_run_read';
const T = '/api/v1/templates';
const W = '/api/v1/workflows';
/** The template operations this file holds to the document (triggers are another's). */
const TEMPLATE_PATH = /^\/api\/v1\/templates(\/\{ref\}(\/run)?)?$/;

type Api = ReturnType<typeof client>;
type Body = Record<string, unknown>;
interface TemplateView {
  template_id: string;
  name: string | null;
  description: string | null;
  version: number;
  latest_version: number;
  versions: number[];
  params: Body[];
  definition: Body & { nodes: Body[] };
  created_at: string;
  updated_at: string;
}
interface RunAccepted {
  workflow_id: string;
  template_id: string;
  version: number;
  status: string;
  clamped: boolean;
}

/** An approval gate: nobody approves it here, so nothing behind it ever runs a container. */
const gate = (ref = 'gate') => ({ ref, type: 'approval' });
const step = (ref: string, extra: Body = {}) => ({
  ref,
  image: IMAGE,
  command: ['true'],
  ...extra,
});
/** A definition whose container nodes wait behind a gate: run, it stays pending or running. */
const guarded = (steps: Body[], extra: Body = {}) => ({
  nodes: [gate(), ...steps],
  edges: steps.map((s) => ({ from: 'gate', to: s.ref })),
  ...extra,
});
const param = (name: string, extra: Body = {}) => ({ name, type: 'string', ...extra });

/**
 * Workflow templates: register, read, PATCH, DELETE, run. The DAG engine is not what is tested
 * here: a run's container nodes wait behind an approval gate nobody approves, and each execution
 * a run started is terminated after the file. Assertions stop at what this layer promises: the
 * answers, the rows stored (workflow, node specs, secrets, audit) and nothing stored on a refusal.
 */
describe('runs API: workflow templates', () => {
  let h: Harness;
  let temporal: Client;
  const launched: string[] = [];
  const { conforms, checked } = runsConformance();

  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all(
      launched.map((id) =>
        temporal.workflow
          .getHandle(dagWorkflowId(id))
          .terminate('the templates test is over')
          .catch(() => undefined),
      ),
    );
    await temporal?.connection.close();
  });

  const tenant = async (permissions = TEMPLATE_PERMISSIONS) => {
    const made = await newTenant(h.pool, { permissions });
    return { ...made, api: client(h.service.url, made.key) };
  };
  const register = async (api: Api, body: Body) => {
    const reply = await api.call<TemplateView & { detail?: string }>('POST', T, body);
    conforms('POST', T, reply);
    return reply;
  };
  const registered = async (api: Api, body: Body) => {
    const reply = await register(api, body);
    expect([reply.status, reply.body.detail]).toEqual([201, undefined]);
    return reply.body;
  };
  const get = async (api: Api, ref: string, query = '') => {
    const reply = await api.call<TemplateView & { detail?: string }>('GET', `${T}/${ref}${query}`);
    conforms('GET', `${T}/{ref}`, reply);
    return reply;
  };
  const patch = async (api: Api, ref: string, body: Body) => {
    const reply = await api.call<TemplateView & { detail?: string }>('PATCH', `${T}/${ref}`, body);
    conforms('PATCH', `${T}/{ref}`, reply);
    return reply;
  };
  const remove = async (api: Api, ref: string) => {
    const reply = await api.call('DELETE', `${T}/${ref}`);
    conforms('DELETE', `${T}/{ref}`, reply);
    return reply;
  };
  const run = async (api: Api, ref: string, body: Body = {}) => {
    const reply = await api.call<RunAccepted & { detail?: string }>(
      'POST',
      `${T}/${ref}/run`,
      body,
    );
    if (reply.status === 202) launched.push(reply.body.workflow_id);
    conforms('POST', `${T}/{ref}/run`, reply);
    return reply;
  };
  const list = async (api: Api, query = '') => {
    const reply = await api.call<{ templates: TemplateView[]; detail?: string }>(
      'GET',
      `${T}${query}`,
    );
    conforms('GET', T, reply);
    return reply;
  };
  const setQuotas = async (api: Api, quotas: Body) =>
    expect((await api.call('PUT', '/api/v1/tenant/quotas', quotas)).status).toBe(200);
  const count = async (table: 'workflows' | 'templates', tenantId: string): Promise<unknown> =>
    h.pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM ${sql.identifier(['runs', table])} WHERE tenant_id = ${tenantId}`);
  const nodeSpecs = async (workflowId: string) =>
    Object.fromEntries(
      (
        (await h.pool.any(sql.unsafe`
          SELECT ref, spec FROM runs.workflow_nodes WHERE workflow_id = ${workflowId}`)) as {
          ref: string;
          spec: Body;
        }[]
      ).map((r) => [r.ref, r.spec]),
    );

  describe('register and read', () => {
    it('when a template is registered, then 201 answers it at version 1 with its definition redacted, stores it as given and audits it', async () => {
      const { api, tenantId, keyId } = await tenant();
      const definition = guarded(
        [step('build', { env: { MODE: 'fast', REGION: '${{ region }}' } })],
        { name: 'etl-${{ region }}', tags: ['nightly'] },
      );
      const reply = await register(api, {
        name: 'nightly-etl',
        description: 'the nightly ETL',
        params: [
          param('region', {
            type: 'enum',
            enum: ['eu', 'us'],
            default: 'eu',
            description: 'where',
          }),
        ],
        definition,
      });

      expect(reply.status).toBe(201);
      const id = reply.body.template_id;
      expect(reply.body).toEqual({
        template_id: id,
        name: 'nightly-etl',
        description: 'the nightly ETL',
        version: 1,
        latest_version: 1,
        versions: [1],
        params: [
          {
            name: 'region',
            type: 'enum',
            required: false,
            secret: false,
            default: 'eu',
            pattern: null,
            enum: ['eu', 'us'],
            description: 'where',
          },
        ],
        definition: {
          ...definition,
          nodes: [gate(), step('build', { env: { MODE: '[redacted]', REGION: '[redacted]' } })],
        },
        created_at: reply.body.created_at,
        updated_at: reply.body.created_at,
      });
      const stored: unknown = await h.pool.one(sql.unsafe`
        SELECT t.tenant_id, t.name, t.version, v.definition
        FROM runs.templates t JOIN runs.template_versions v USING (template_id)
        WHERE template_id = ${id}`);
      expect(stored).toEqual({ tenant_id: tenantId, name: 'nightly-etl', version: 1, definition });
      const audit: unknown = await h.pool.one(sql.unsafe`
        SELECT actor, action, outcome, target, detail FROM runs.audit_records
        WHERE tenant_id = ${tenantId} AND action = 'template.create'`);
      expect(audit).toEqual({
        actor: keyId,
        action: 'template.create',
        outcome: 'ok',
        target: id,
        detail: { name: 'nightly-etl', version: 1 },
      });
    });

    it('when a template is read by id (any case) or by name, then the same template answers; another ref is 404 template_not_found', async () => {
      const { api } = await tenant();
      const made = await registered(api, { name: 'by-name', definition: guarded([step('a')]) });

      const byId = await get(api, made.template_id);
      expect(byId.body).toEqual(made);
      expect((await get(api, made.template_id.toLowerCase())).body).toEqual(made);
      expect((await get(api, 'by-name')).body).toEqual(made);
      for (const ref of [
        'no-such-name',
        '01J00000000000000000000000',
        'NOT A REF',
        'x'.repeat(200),
        'a\u0000b',
        'UPPER-name',
      ])
        expect(await get(api, encodeURIComponent(ref))).toMatchObject({
          status: 404,
          body: { detail: 'template_not_found' },
        });
    });

    it('when templates are listed, then newest first, without params or definitions, paged by limit and offset', async () => {
      const { api } = await tenant();
      const ids: string[] = [];
      for (const name of ['first', 'second', 'third'])
        ids.push((await registered(api, { name, definition: guarded([]) })).template_id);

      const all = await list(api);
      expect(all.body.templates.map((t) => t.template_id)).toEqual([...ids].reverse());
      expect(Object.keys(all.body.templates[0]!).sort()).toEqual(
        ['created_at', 'description', 'name', 'template_id', 'updated_at', 'version'].sort(),
      );
      expect(all.body).toMatchObject({ limit: 50, offset: 0 });
      const page = await list(api, '?limit=1&offset=1');
      expect(page.body.templates.map((t) => t.template_id)).toEqual([ids[1]]);
      expect((await list(api, '?limit=1001')).status).toBe(422);
      expect((await list(api, '?limit=1000')).status).toBe(200);
      expect(await list(api, '?page=2')).toMatchObject({
        status: 400,
        body: { detail: 'unknown query parameter(s): page; supported: limit, offset' },
      });
    });

    it.each([
      ['a name of 2 characters', 201, 'ab'],
      ['a name of 63 characters', 201, `a${'b'.repeat(62)}`],
      ['a name of 1 character', 422, 'a'],
      ['a name of 64 characters', 422, `a${'b'.repeat(63)}`],
      ['a name with capitals', 422, 'Nightly'],
      ['a name starting with a digit', 422, '1st'],
      ['a name with an underscore', 422, 'a_b'],
      ['a name with dashes and digits', 201, 'a-1-b'],
    ])('when a template has %s, then %i', async (_label, status, name) => {
      const { api } = await tenant();
      expect((await register(api, { name, definition: guarded([]) })).status).toBe(status);
    });

    it('when a name is taken by a live template, then 409 template_name_taken; without a name, any number may be registered', async () => {
      const { api, tenantId } = await tenant();
      await registered(api, { name: 'taken', definition: guarded([]) });

      expect(await register(api, { name: 'taken', definition: guarded([]) })).toMatchObject({
        status: 409,
        body: { detail: 'template_name_taken' },
      });
      expect((await registered(api, { definition: guarded([]) })).name).toBeNull();
      expect((await registered(api, { name: null, definition: guarded([]) })).name).toBeNull();
      expect(await count('templates', tenantId)).toBe(3);
    });

    it('when a body has an unknown field or no definition, then 422', async () => {
      const { api } = await tenant();
      expect((await register(api, { definition: guarded([]), colour: 'x' })).status).toBe(422);
      expect((await register(api, { name: 'no-definition' })).status).toBe(422);
      expect((await register(api, { definition: [] })).status).toBe(422);
    });
  });

  describe('versions and pinning', () => {
    it('when params or a definition are patched, then each publishes a version; a rename or description does not; old versions stay readable and runnable', async () => {
      const { api, tenantId } = await tenant();
      const v1 = guarded([step('one', { command: ['echo', '${{ msg }}'] })]);
      const made = await registered(api, {
        name: 'versions',
        params: [param('msg', { default: 'one' })],
        definition: v1,
      });
      const ref = made.template_id;

      const v2 = guarded([step('two', { command: ['echo', '${{ msg }}'] })]);
      const second = await patch(api, ref, { definition: v2 });
      expect([second.status, second.body.version, second.body.versions]).toEqual([200, 2, [1, 2]]);
      expect(second.body.params.map((p) => p.default)).toEqual(['one']);
      const third = await patch(api, 'versions', { params: [param('msg', { default: 'three' })] });
      expect([third.body.version, third.body.definition]).toEqual([3, v2]);
      const renamed = await patch(api, ref, { name: 'renamed', description: 'now described' });
      expect(renamed.body).toMatchObject({
        name: 'renamed',
        description: 'now described',
        version: 3,
        latest_version: 3,
        versions: [1, 2, 3],
      });
      expect(renamed.body.updated_at >= third.body.updated_at).toBe(true);

      const first = await get(api, ref, '?version=1');
      expect(first.body).toMatchObject({ version: 1, latest_version: 3, definition: v1 });
      expect(first.body.params.map((p) => p.default)).toEqual(['one']);
      expect((await get(api, 'renamed', '?version=2')).body.definition).toEqual(v2);
      for (const version of ['4', '99'])
        expect(await get(api, ref, `?version=${version}`)).toMatchObject({
          status: 404,
          body: { detail: 'template_version_not_found' },
        });
      expect((await get(api, ref, '?version=0')).status).toBe(422);

      const pinned = await run(api, ref, { version: 1 });
      expect(pinned.body).toEqual({
        workflow_id: pinned.body.workflow_id,
        template_id: ref,
        version: 1,
        status: 'pending',
        clamped: false,
      });
      expect(Object.keys(await nodeSpecs(pinned.body.workflow_id)).sort()).toEqual(['gate', 'one']);
      expect((await nodeSpecs(pinned.body.workflow_id)).one!.command).toEqual(['echo', 'one']);
      const latest = await run(api, 'renamed');
      expect(latest.body.version).toBe(3);
      expect((await nodeSpecs(latest.body.workflow_id)).two!.command).toEqual(['echo', 'three']);
      expect(await run(api, ref, { version: 4 })).toMatchObject({
        status: 404,
        body: { detail: 'template_version_not_found' },
      });
      expect(await count('workflows', tenantId)).toBe(2);
    });

    it('when a patch publishes a version the latest params cannot serve, then 422 and nothing changes', async () => {
      const { api } = await tenant();
      const made = await registered(api, {
        params: [param('msg')],
        definition: guarded([step('a', { command: ['echo', '${{ msg }}'] })]),
      });

      const refused = await patch(api, made.template_id, { params: [] });
      expect(refused).toMatchObject({
        status: 422,
        body: { detail: 'unknown_template_param:msg' },
      });
      expect((await get(api, made.template_id)).body).toEqual(made);
    });

    it(`when a template holds ${TEMPLATE_VERSIONS_MAX} versions, then the next is 409 template_version_limit and nothing changes; a rename still applies`, async () => {
      const { api } = await tenant();
      const made = await registered(api, { definition: guarded([step('a')]) });
      for (let v = 2; v <= TEMPLATE_VERSIONS_MAX; v += 1) {
        const next = await patch(api, made.template_id, {
          definition: guarded([step('a', { command: ['echo', String(v)] })]),
        });
        expect([next.status, next.body.version]).toEqual([200, v]);
      }
      const over = await patch(api, made.template_id, {
        definition: guarded([step('a', { command: ['echo', 'over'] })]),
      });
      expect([over.status, over.body.detail]).toEqual([409, 'template_version_limit']);
      const kept = (await get(api, made.template_id)).body;
      expect([kept.version, kept.versions.length]).toEqual([
        TEMPLATE_VERSIONS_MAX,
        TEMPLATE_VERSIONS_MAX,
      ]);
      expect((await patch(api, made.template_id, { description: 'still' })).status).toBe(200);
    });

    it('when name null is patched, then the name is cleared and free for another template; each change is audited', async () => {
      const { api, tenantId, keyId } = await tenant();
      const made = await registered(api, { name: 'clear-me', definition: guarded([]) });

      expect((await patch(api, 'clear-me', { name: null })).body.name).toBeNull();
      expect((await get(api, 'clear-me')).status).toBe(404);
      await registered(api, { name: 'clear-me', definition: guarded([]) });
      expect(await patch(api, made.template_id, { name: 'clear-me' })).toMatchObject({
        status: 409,
        body: { detail: 'template_name_taken' },
      });
      expect((await patch(api, made.template_id, { name: 'other-name' })).status).toBe(200);
      const audit = await h.pool.any(sql.unsafe`
        SELECT actor, target, detail FROM runs.audit_records
        WHERE tenant_id = ${tenantId} AND action = 'template.update' AND outcome = 'ok'
        ORDER BY audit_id`);
      expect(audit).toEqual([
        { actor: keyId, target: made.template_id, detail: { fields: ['name'], version: 1 } },
        { actor: keyId, target: made.template_id, detail: { fields: ['name'], version: 1 } },
      ]);
    });

    it('when a patch is empty or has an unknown field, then 422; on a template not the tenant’s, 404', async () => {
      const { api } = await tenant();
      const made = await registered(api, { definition: guarded([]) });
      expect((await patch(api, made.template_id, {})).status).toBe(422);
      expect((await patch(api, made.template_id, { version: 2 })).status).toBe(422);
      expect((await patch(api, 'nobody', { description: 'x' })).status).toBe(404);
    });
  });

  describe('parameter declarations at register', () => {
    const definition = guarded([]);
    const declare = async (params: Body[]) => {
      const { api, tenantId } = await tenant();
      const reply = await register(api, { params, definition });
      if (reply.status !== 201) expect(await count('templates', tenantId)).toBe(0);
      return reply;
    };
    const many = (n: number, make: (i: number) => unknown) =>
      Array.from({ length: n }, (_, i) => make(i));

    it.each([
      ['50 parameters', 201, many(50, (i) => param(`p${i}`))],
      ['51 parameters', 422, many(51, (i) => param(`p${i}`))],
      ['two of one name', 422, [param('a'), param('a', { type: 'enum', enum: ['x'] })]],
      ['a name of 63 characters', 201, [param(`a${'b'.repeat(62)}`)]],
      ['a name of 64 characters', 422, [param(`a${'b'.repeat(63)}`)]],
      ['a name with a capital', 422, [param('Region')]],
      ['a name starting with _', 201, [param('_x')]],
      ['no type', 422, [{ name: 'a' }]],
      ['type number', 422, [param('a', { type: 'number' })]],
      ['a pattern of 512 characters', 201, [param('a', { pattern: 'a'.repeat(512) })]],
      ['a pattern of 513 characters', 422, [param('a', { pattern: 'a'.repeat(513) })]],
      ['a pattern that is no regular expression', 422, [param('a', { pattern: '([a-z]' })]],
      ['a pattern on an enum', 422, [param('a', { type: 'enum', enum: ['x'], pattern: 'x' })]],
      ['100 enum values', 201, [param('a', { type: 'enum', enum: many(100, (i) => `v${i}`) })]],
      ['101 enum values', 422, [param('a', { type: 'enum', enum: many(101, (i) => `v${i}`) })]],
      ['no enum values', 422, [param('a', { type: 'enum', enum: [] })]],
      ['an enum without its list', 422, [param('a', { type: 'enum' })]],
      ['a repeated enum value', 422, [param('a', { type: 'enum', enum: ['x', 'x'] })]],
      [
        'an enum value of 256 characters',
        201,
        [param('a', { type: 'enum', enum: ['v'.repeat(256)] })],
      ],
      [
        'an enum value of 257 characters',
        422,
        [param('a', { type: 'enum', enum: ['v'.repeat(257)] })],
      ],
      ['an enum list on a string', 422, [param('a', { enum: ['x'] })]],
      ['a default of 4096 characters', 201, [param('a', { default: 'd'.repeat(4096) })]],
      ['a default of 4097 characters', 422, [param('a', { default: 'd'.repeat(4097) })]],
      ['a default on a required parameter', 422, [param('a', { required: true, default: 'x' })]],
      ['a default on a secret parameter', 422, [param('a', { secret: true, default: 'x' })]],
      ['an unknown field', 422, [param('a', { hint: 'x' })]],
    ])('when the declarations have %s, then %i', async (_label, status, params) => {
      expect((await declare(params as Body[])).status).toBe(status);
    });

    it.each([
      ['off its pattern', param('code', { pattern: '[A-Z]{3}', default: 'abc' })],
      ['matching only part of it', param('code', { pattern: '[A-Z]{3}', default: 'ABCD' })],
      ['not in its enum', param('code', { type: 'enum', enum: ['a', 'b'], default: 'c' })],
      ['holding a placeholder', param('code', { default: '${{ code }}' })],
    ])('when a default is %s, then 422 invalid_template_param:<name>', async (_label, p) => {
      expect((await declare([p])).body).toEqual({ detail: 'invalid_template_param:code' });
    });

    it('when a default meets its own rule, then it is kept and shown', async () => {
      const reply = await declare([param('code', { pattern: '[A-Z]{3}', default: 'ABC' })]);
      expect(reply.body.params[0]).toMatchObject({ default: 'ABC', pattern: '[A-Z]{3}' });
    });
  });

  describe('definitions at register', () => {
    const params = [param('msg'), param('token', { secret: true }), param('image')];

    it.each([
      [
        'a placeholder naming no parameter',
        'unknown_template_param:nope',
        guarded([step('a', { command: ['${{ nope }}'] })]),
      ],
      [
        'a secret in a command',
        'secret_param_outside_env:token',
        guarded([step('a', { command: ['${{ token }}'] })]),
      ],
      [
        'a secret in an image',
        'secret_param_outside_env:token',
        guarded([step('a', { image: '${{ token }}' })]),
      ],
      [
        'a secret in the name',
        'secret_param_outside_env:token',
        guarded([], { name: '${{ token }}' }),
      ],
      [
        'a secret in a tag',
        'secret_param_outside_env:token',
        guarded([], { tags: ['${{ token }}'] }),
      ],
      [
        'retries 11',
        'invalid_template_definition: nodes[1].retries must be less than or equal to 10',
        guarded([step('a', { retries: 11 })]),
      ],
      [
        'an unknown top-level field',
        'invalid_template_definition: colour is not allowed',
        guarded([], { colour: 'x' }),
      ],
      [
        'a webhook',
        'invalid_template_definition: webhook is not allowed in a definition (a run gives its own)',
        guarded([], { webhook: { url: 'https://x.example', events: ['*'] } }),
      ],
      [
        'no nodes',
        'invalid_template_definition: nodes must contain at least 1 items',
        { nodes: [] },
      ],
    ])('when the definition has %s, then 422 %s', async (_label, detail, definition) => {
      const { api, tenantId } = await tenant();
      expect(await register(api, { params, definition })).toMatchObject({
        status: 422,
        body: { detail },
      });
      expect(await count('templates', tenantId)).toBe(0);
    });

    it('when a value holds a placeholder, then it is judged at run, not at register', async () => {
      const { api } = await tenant();
      const definition = guarded([step('a', { image: '${{ image }}', retries: '${{ msg }}' })]);
      expect((await register(api, { params, definition })).status).toBe(201);
    });

    it('when a definition is over 256 KiB of JSON, then 422 template_too_large; at 256 KiB it is kept', async () => {
      const { api } = await tenant();
      const sized = (bytes: number) => {
        const pads = Array.from({ length: 10 }, (_, i) => `P${i}`);
        const make = (values: string[]) =>
          guarded([step('a', { env: Object.fromEntries(pads.map((k, i) => [k, values[i]!])) })]);
        let pad = bytes - Buffer.byteLength(JSON.stringify(make(pads.map(() => ''))));
        return make(
          pads.map(() => 'x'.repeat(Math.max(0, Math.min(30_000, (pad -= 30_000) + 30_000)))),
        );
      };
      expect(Buffer.byteLength(JSON.stringify(sized(256 * 1024)))).toBe(256 * 1024);
      expect((await register(api, { definition: sized(256 * 1024) })).status).toBe(201);
      expect(await register(api, { definition: sized(256 * 1024 + 1) })).toMatchObject({
        status: 422,
        body: { detail: 'template_too_large' },
      });
    });
  });

  describe('run', () => {
    const params = [
      param('region', { type: 'enum', enum: ['eu', 'us'], required: true }),
      param('tag', { pattern: '[a-z]{2,4}', default: 'abc' }),
      param('note'),
      param('retries', { default: '1' }),
    ];
    const definition = guarded(
      [
        step('build', {
          command: ['echo', '${{ note }}', '${{ tag }}'],
          env: { REGION: '${{ region }}' },
          retries: '${{ retries }}',
        }),
      ],
      { name: 'etl-${{ region }}', tags: ['from-template'] },
    );
    const setUp = async () => {
      const made = await tenant();
      const template = await registered(made.api, { name: 'etl', params, definition });
      return { ...made, template };
    };

    it('when a template is run by id or by name, then 202 answers the workflow, stored with its template_id, substituted, with the run’s name and tags', async () => {
      const { api, tenantId, keyId, template } = await setUp();

      const byId = await run(api, template.template_id.toLowerCase(), {
        params: { region: 'eu', note: 'hello world' },
      });
      expect(byId.status).toBe(202);
      expect(byId.body).toEqual({
        workflow_id: byId.body.workflow_id,
        template_id: template.template_id,
        version: 1,
        status: 'pending',
        clamped: false,
      });
      const byName = await run(api, 'etl', {
        params: { region: 'us', tag: 'xy', retries: '3' },
        name: 'renamed',
        tags: ['extra', 'from-template'],
      });
      expect(byName.status).toBe(202);

      const workflow = async (id: string) => {
        const reply = await api.call<Body>('GET', `${W}/${id}`);
        expect(reply.status).toBe(200);
        return reply.body;
      };
      expect(await workflow(byId.body.workflow_id)).toMatchObject({
        name: 'etl-eu',
        tags: ['from-template'],
        template_id: template.template_id,
        state: expect.stringMatching(/^(pending|running)$/) as unknown,
      });
      expect(await workflow(byName.body.workflow_id)).toMatchObject({
        name: 'renamed',
        tags: ['from-template', 'extra'],
        template_id: template.template_id,
      });
      expect((await nodeSpecs(byId.body.workflow_id)).build).toMatchObject({
        command: ['echo', 'hello world', 'abc'],
        env: { REGION: 'eu' },
        retries: 1,
      });
      expect((await nodeSpecs(byName.body.workflow_id)).build).toMatchObject({
        command: ['echo', '', 'xy'],
        env: { REGION: 'us' },
        retries: 3,
      });
      const audit = await h.pool.any(sql.unsafe`
        SELECT actor, target, detail FROM runs.audit_records
        WHERE tenant_id = ${tenantId} AND action = 'template.run' ORDER BY audit_id`);
      expect(audit).toEqual([
        {
          actor: keyId,
          target: template.template_id,
          detail: { workflow_id: byId.body.workflow_id, version: 1, params: ['region', 'note'] },
        },
        {
          actor: keyId,
          target: template.template_id,
          detail: {
            workflow_id: byName.body.workflow_id,
            version: 1,
            params: ['region', 'tag', 'retries'],
          },
        },
      ]);
    });

    it('when workflows are listed by template_id, then only that template’s answer', async () => {
      const { api, template } = await setUp();
      const other = await registered(api, { definition: guarded([]) });
      const a = (await run(api, 'etl', { params: { region: 'eu' } })).body.workflow_id;
      const b = (await run(api, other.template_id)).body.workflow_id;
      const plain = await api.call<{ workflow_id: string }>('POST', W, guarded([]));
      launched.push(plain.body.workflow_id);

      const ids = async (query: string) =>
        (
          await api.call<{ workflows: { workflow_id: string }[] }>('GET', `${W}${query}`)
        ).body.workflows.map((w) => w.workflow_id);
      expect(await ids(`?template_id=${template.template_id}`)).toEqual([a]);
      expect(await ids(`?template_id=${other.template_id}`)).toEqual([b]);
      expect(await ids('')).toEqual([plain.body.workflow_id, b, a]);
    });

    it('when scheduled_start is given, then it is stored with the workflow (a past one as now); without it none is', async () => {
      const { api } = await setUp();
      const future = new Date(Date.now() + 3_600_000).toISOString();
      const later = await run(api, 'etl', { params: { region: 'eu' }, scheduled_start: future });
      const before = Date.now();
      const past = await run(api, 'etl', {
        params: { region: 'eu' },
        scheduled_start: '2020-01-01T00:00:00Z',
      });
      const none = await run(api, 'etl', { params: { region: 'eu' } });
      const startOf = async (id: string) =>
        (await h.pool.oneFirst(sql.unsafe`
          SELECT scheduled_start FROM runs.workflows WHERE workflow_id = ${id}`)) as string | null;

      expect(await startOf(later.body.workflow_id)).toBe(future);
      const clamped = Date.parse((await startOf(past.body.workflow_id))!);
      expect(clamped).toBeGreaterThanOrEqual(before - 1000);
      expect(clamped).toBeLessThanOrEqual(Date.now());
      expect(await startOf(none.body.workflow_id)).toBeNull();
      expect(
        (await run(api, 'etl', { params: { region: 'eu' }, scheduled_start: 'soon' })).status,
      ).toBe(422);
    });

    it('when a run carries a webhook, then it is stored as the workflow’s inline subscription', async () => {
      const { api } = await setUp();
      const reply = await run(api, 'etl', {
        params: { region: 'eu' },
        webhook: { url: 'https://hooks.example/etl', events: ['workflow.terminal'] },
      });
      const inline: unknown = await h.pool.one(sql.unsafe`
        SELECT url, events, secret_origin FROM runs.webhook_endpoints
        WHERE inline_for = ${reply.body.workflow_id}`);
      expect(inline).toEqual({
        url: 'https://hooks.example/etl',
        events: ['workflow.terminal'],
        secret_origin: 'none',
      });
      expect(
        await run(api, 'etl', {
          params: { region: 'eu' },
          webhook: { url: 'https://x.example', events: ['*'], extra: 1 },
        }),
      ).toMatchObject({ status: 422 });
      expect(
        await run(api, 'etl', {
          params: { region: 'eu' },
          webhook: { url: 'http://x.example', events: ['*'] },
        }),
      ).toMatchObject({ status: 400, body: { detail: 'invalid_webhook_url' } });
    });

    it.each([
      ['an undeclared parameter', 'unknown_template_param:colour', { region: 'eu', colour: 'red' }],
      ['no value for a required parameter', 'missing_template_param:region', { tag: 'ab' }],
      ['a value not in the enum', 'invalid_template_param:region', { region: 'asia' }],
      [
        'a value in another case than the enum’s',
        'invalid_template_param:region',
        { region: 'EU' },
      ],
      [
        'a value off the pattern (too long)',
        'invalid_template_param:tag',
        { region: 'eu', tag: 'abcde' },
      ],
      [
        'a value off the pattern (too short)',
        'invalid_template_param:tag',
        { region: 'eu', tag: 'a' },
      ],
      [
        'a value off the pattern (a digit)',
        'invalid_template_param:tag',
        { region: 'eu', tag: 'ab1' },
      ],
      [
        'a value holding a placeholder',
        'invalid_template_param:note',
        { region: 'eu', note: '${{ region }}' },
      ],
      [
        'a value the substituted definition refuses',
        'invalid_template_definition: nodes[1].retries must be less than or equal to 10',
        { region: 'eu', retries: '11' },
      ],
      [
        'a non-numeric retries',
        'invalid_template_definition: nodes[1].retries must be a number',
        { region: 'eu', retries: 'many' },
      ],
    ])(
      'when a run has %s, then 422 %s before any workflow row exists',
      async (_l, detail, given) => {
        const { api, tenantId } = await setUp();
        expect(await run(api, 'etl', { params: given })).toMatchObject({
          status: 422,
          body: { detail },
        });
        expect(await count('workflows', tenantId)).toBe(0);
      },
    );

    it('a value is at most 4096 characters: at the edge it runs, past it 422 before any workflow row', async () => {
      const { api, tenantId } = await setUp();
      expect(
        (await run(api, 'etl', { params: { region: 'eu', note: 'n'.repeat(4097) } })).status,
      ).toBe(422);
      expect(await count('workflows', tenantId)).toBe(0);
      expect(
        (await run(api, 'etl', { params: { region: 'eu', note: 'n'.repeat(4096) } })).status,
      ).toBe(202);
    });

    it('when a run body has an unknown field or a value that is no string, then 422', async () => {
      const { api, tenantId } = await setUp();
      expect((await run(api, 'etl', { params: { region: 'eu' }, colour: 'x' })).status).toBe(422);
      expect((await run(api, 'etl', { params: { region: 3 } })).status).toBe(422);
      expect((await run(api, 'etl', { params: { region: 'eu' }, version: 0 })).status).toBe(422);
      expect(await count('workflows', tenantId)).toBe(0);
    });

    it('when the substituted definition fails the submit path, then its refusals are unchanged (invalid_image, invalid_graph, too_many_nodes, image_not_allowed)', async () => {
      const { api, tenantId } = await tenant();
      await registered(api, {
        name: 'loose',
        params: [param('image'), param('to')],
        definition: {
          nodes: [gate('a'), gate('b'), step('c', { image: '${{ image }}' })],
          edges: [{ from: 'a', to: '${{ to }}' }],
        },
      });
      const call = (p: Body) => run(api, 'loose', { params: p });

      expect(await call({ image: 'busybox', to: 'b' })).toMatchObject({
        status: 400,
        body: { detail: 'invalid_image:busybox' },
      });
      expect(await call({ image: IMAGE, to: 'nowhere' })).toMatchObject({
        status: 400,
        body: { detail: 'invalid_graph' },
      });
      const tier = `tpl-${randomBytes(4).toString('hex')}`;
      await runAdmin(
        ['tier', 'set', tier, '--allowed-images', `${config.registryAddress}/`],
        h.pool,
      );
      const { json } = await runAdmin(
        [
          'key',
          'create',
          '--tenant',
          tenantId,
          '--permissions',
          TEMPLATE_PERMISSIONS,
          '--tier',
          tier,
        ],
        h.pool,
      );
      const tiered = client(h.service.url, (json as { key: string }).key);
      expect(
        await run(tiered, 'loose', { params: { image: 'example.com/other:1', to: 'b' } }),
      ).toMatchObject({ status: 403, body: { detail: 'image_not_allowed' } });
      await setQuotas(api, { max_nodes_per_workflow: 2 });
      expect(await call({ image: IMAGE, to: 'b' })).toMatchObject({
        status: 400,
        body: { detail: 'too_many_nodes' },
      });
      expect(await count('workflows', tenantId)).toBe(0);
    });

    it('when the tenant is at max_concurrent_workflows, then the run is 429 workflow_quota_exceeded as a submit', async () => {
      const { api, tenantId } = await setUp();
      await setQuotas(api, { max_concurrent_workflows: 1 });
      expect((await run(api, 'etl', { params: { region: 'eu' } })).status).toBe(202);
      expect(await run(api, 'etl', { params: { region: 'eu' } })).toMatchObject({
        status: 429,
        body: { detail: 'workflow_quota_exceeded' },
      });
      expect(await count('workflows', tenantId)).toBe(1);
    });
  });

  describe('secret parameters', () => {
    const SECRET = `s3cr3t-${randomBytes(12).toString('hex')}`;
    const params = [
      param('token', { secret: true, required: true }),
      param('who', { secret: true }),
    ];
    const definition = guarded([
      step('call', {
        command: ['sh', '-c', 'echo "$AUTH"'],
        env: { AUTH: 'Bearer ${{token}}', OTHER: '${{ who }}', PLAIN: 'visible?' },
      }),
    ]);

    it('when a template has secret parameters, then reads mark them, show no default and redact every env value', async () => {
      const { api } = await tenant();
      const made = await registered(api, { name: 'secretive', params, definition });

      for (const view of [made, (await get(api, 'secretive')).body]) {
        expect(view.params.map((p) => [p.name, p.secret, p.default])).toEqual([
          ['token', true, null],
          ['who', true, null],
        ]);
        expect(view.definition.nodes[1]!.env).toEqual({
          AUTH: '[redacted]',
          OTHER: '[redacted]',
          PLAIN: '[redacted]',
        });
      }
    });

    it('when it is run, then the value is stored only encrypted, bound to the workflow; no read, spec or audit record holds it', async () => {
      const { api, tenantId } = await tenant();
      await registered(api, { name: 'secretive', params, definition });

      const reply = await run(api, 'secretive', { params: { token: SECRET } });
      expect(reply.status).toBe(202);
      const id = reply.body.workflow_id;

      const rows = (await h.pool.any(sql.unsafe`
        SELECT name, ciphertext FROM runs.workflow_secrets WHERE workflow_id = ${id}
        ORDER BY name`)) as { name: string; ciphertext: string }[];
      expect(rows.map((r) => r.name)).toEqual(['token', 'who']);
      for (const row of rows) {
        expect(row.ciphertext).toMatch(/^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]*$/);
        expect(row.ciphertext).not.toContain(SECRET);
      }
      const key = config.runs.secretsKey!;
      expect(decryptWorkflowSecret(key, id, 'token', rows[0]!.ciphertext)).toBe(SECRET);
      expect(decryptWorkflowSecret(key, id, 'who', rows[1]!.ciphertext)).toBe('');

      expect((await nodeSpecs(id)).call!.env).toEqual({
        AUTH: 'Bearer ${{ token }}',
        OTHER: '${{ who }}',
        PLAIN: 'visible?',
      });
      const reads = [
        await api.call('GET', `${W}/${id}`),
        await api.call('GET', `${W}/${id}/nodes/call`),
        await api.call('GET', `${W}?template_id=${reply.body.template_id}`),
        await api.call('GET', `${W}/${id}/events`),
        await get(api, 'secretive'),
        await list(api),
        await api.call('GET', '/api/v1/audit'),
      ];
      for (const read of reads) {
        expect(read.status).toBe(200);
        expect(JSON.stringify(read.body)).not.toContain(SECRET);
      }
      const leaks: unknown = await h.pool.oneFirst(sql.unsafe`
        SELECT (SELECT count(*) FROM runs.workflow_nodes WHERE workflow_id = ${id} AND spec::text LIKE ${`%${SECRET}%`})
             + (SELECT count(*) FROM runs.workflows WHERE workflow_id = ${id} AND workflow_input::text LIKE ${`%${SECRET}%`})
             + (SELECT count(*) FROM runs.audit_records WHERE tenant_id = ${tenantId} AND detail::text LIKE ${`%${SECRET}%`})
             + (SELECT count(*) FROM runs.template_versions v JOIN runs.templates t USING (template_id)
                WHERE t.tenant_id = ${tenantId} AND (v.params::text || v.definition::text) LIKE ${`%${SECRET}%`})`);
      expect(Number(leaks)).toBe(0);
    });

    it('when a run with a secret value is refused, then its audit record does not hold the value', async () => {
      const { api, tenantId } = await tenant();
      await registered(api, {
        name: 'secretive',
        params: [...params, param('mode', { type: 'enum', enum: ['a'] })],
        definition,
      });

      const refused = await run(api, 'secretive', { params: { token: SECRET, mode: 'b' } });
      expect(refused).toMatchObject({
        status: 422,
        body: { detail: 'invalid_template_param:mode' },
      });
      const records = await h.pool.any(sql.unsafe`
        SELECT detail FROM runs.audit_records WHERE tenant_id = ${tenantId} AND outcome = 'refused'`);
      expect(records).toHaveLength(1);
      expect(JSON.stringify(records)).not.toContain(SECRET);
      expect(await count('workflows', tenantId)).toBe(0);
    });

    it('when the service has no RUNS_SECRETS_KEY, then a template with secrets registers, but running it is 503 secrets_unavailable; one without runs', async () => {
      let keyless: TestService | undefined;
      try {
        keyless = await startTestService('runs', {
          RUNS_RETENTION_SCHEDULE: 'false',
          RUNS_SECRETS_KEY: '',
        });
        const { key, tenantId } = await newTenant(h.pool, { permissions: TEMPLATE_PERMISSIONS });
        const api = client(keyless.url, key);
        const made = await api.call<TemplateView>('POST', T, {
          name: 'secretive',
          params,
          definition,
        });
        expect(made.status).toBe(201);
        const refused = await api.call('POST', `${T}/secretive/run`, { params: { token: SECRET } });
        expect(refused).toMatchObject({ status: 503, body: { detail: 'secrets_unavailable' } });
        conforms('POST', `${T}/{ref}/run`, refused);
        expect(await count('workflows', tenantId)).toBe(0);
        await api.call('POST', T, { name: 'plain', definition: guarded([]) });
        const plain = await api.call<RunAccepted>('POST', `${T}/plain/run`, {});
        expect(plain.status).toBe(202);
        launched.push(plain.body.workflow_id);
      } finally {
        await keyless?.close();
      }
    });
  });

  describe('launch', () => {
    it('when a template run is accepted, then its workflow runs its containers as a submitted one would, with the values substituted', async () => {
      const { api, key } = await tenant();
      await registered(api, {
        name: 'echo',
        params: [param('region', { type: 'enum', enum: ['eu', 'us'] })],
        definition: {
          nodes: [shNode('say', `echo '{"region":"\${{ region }}"}'`, { timeout_seconds: 60 })],
        },
      });

      const reply = await run(api, 'echo', { params: { region: 'us' } });
      expect(reply.status).toBe(202);
      const dag = dagClient(h.service.url, key);
      const done = await dag.waitForState(reply.body.workflow_id);
      expect(done.state).toBe('succeeded');
      expect((await dag.node(reply.body.workflow_id, 'say')).output).toEqual({ region: 'us' });
    }, 120_000);
  });

  describe('delete', () => {
    it('when a template is deleted, then it is found, listed and run no more, its name is free, its workflows go on, and it is audited', async () => {
      const { api, tenantId } = await tenant();
      const made = await registered(api, { name: 'doomed', definition: guarded([step('a')]) });
      const launchedBefore = (await run(api, 'doomed')).body.workflow_id;

      expect((await remove(api, 'doomed')).status).toBe(204);
      for (const ref of ['doomed', made.template_id]) {
        expect((await get(api, ref)).status).toBe(404);
        expect((await run(api, ref)).status).toBe(404);
        expect((await patch(api, ref, { description: 'x' })).status).toBe(404);
        expect(await remove(api, ref)).toMatchObject({
          status: 404,
          body: { detail: 'template_not_found' },
        });
      }
      expect((await list(api)).body.templates).toEqual([]);
      const workflow = await api.call<Body>('GET', `${W}/${launchedBefore}`);
      expect(workflow.body).toMatchObject({ template_id: made.template_id });
      expect(workflow.body.state).not.toBe('cancelled');
      const reborn = await registered(api, { name: 'doomed', definition: guarded([]) });
      expect(reborn.template_id).not.toBe(made.template_id);
      const audit: unknown = await h.pool.one(sql.unsafe`
        SELECT target, detail FROM runs.audit_records
        WHERE tenant_id = ${tenantId} AND action = 'template.delete'`);
      expect(audit).toEqual({ target: made.template_id, detail: { name: 'doomed' } });
    });
  });

  describe('max_templates', () => {
    it('when the tenant holds max_templates, then the next is 429 template_quota_exceeded; a deletion frees a slot', async () => {
      const { api, tenantId } = await tenant();
      await setQuotas(api, { max_templates: 2 });
      const first = await registered(api, { definition: guarded([]) });
      await registered(api, { definition: guarded([]) });

      expect(await register(api, { definition: guarded([]) })).toMatchObject({
        status: 429,
        body: { detail: 'template_quota_exceeded' },
      });
      expect(await count('templates', tenantId)).toBe(2);
      await remove(api, first.template_id);
      expect((await register(api, { definition: guarded([]) })).status).toBe(201);
    });

    it('when registrations race for the last slots, then exactly max_templates succeed', async () => {
      const { api } = await tenant();
      await setQuotas(api, { max_templates: 3 });
      const replies = await Promise.all(
        Array.from({ length: 8 }, () => api.call('POST', T, { definition: guarded([]) })),
      );
      expect(replies.map((r) => r.status).sort()).toEqual([201, 201, 201, 429, 429, 429, 429, 429]);
    });

    it('is a tenant quota: 100 by default, 0 allowed (no template), bounded like the others', async () => {
      const { api } = await tenant();
      const quotas = await api.call<Body>('GET', '/api/v1/tenant/quotas');
      expect(quotas.body.max_templates).toBe(100);
      expect((await api.call('PUT', '/api/v1/tenant/quotas', { max_templates: -1 })).status).toBe(
        422,
      );
      expect(
        (await api.call('PUT', '/api/v1/tenant/quotas', { max_templates: 2 ** 31 })).status,
      ).toBe(422);
      await setQuotas(api, { max_templates: 0 });
      expect((await register(api, { definition: guarded([]) })).status).toBe(429);
    });
  });

  describe('permissions and tenants', () => {
    it('when a key lacks svc_workflow_submit, then a run is 403 though it holds svc_template_run; the other routes need their own permission', async () => {
      const owner = await tenant();
      await registered(owner.api, { name: 'guarded', definition: guarded([]) });
      const { json } = await runAdmin(
        [
          'key',
          'create',
          '--tenant',
          owner.tenantId,
          '--permissions',
          'svc_template_run,svc_template_read',
        ],
        h.pool,
      );
      const runOnly = client(h.service.url, (json as { key: string }).key);
      const denied = await runOnly.call('POST', `${T}/guarded/run`, {});
      expect(denied).toMatchObject({ status: 403, body: { detail: 'permission_denied' } });
      conforms('POST', `${T}/{ref}/run`, denied);
      expect((await runOnly.call('GET', `${T}/guarded`)).status).toBe(200);
      expect((await runOnly.call('POST', T, { definition: guarded([]) })).status).toBe(403);
      expect((await runOnly.call('PATCH', `${T}/guarded`, { description: 'x' })).status).toBe(403);
      expect((await runOnly.call('DELETE', `${T}/guarded`)).status).toBe(403);
      expect(await count('workflows', owner.tenantId)).toBe(0);
    });

    it('when a key holds only workflow and run permissions, then every template route is 403', async () => {
      const { api } = await tenant(
        'svc_workflow_submit,svc_workflow_read,svc_run_submit,svc_run_read,svc_tenant_admin',
      );
      const routes: [string, string, Body?][] = [
        ['POST', T, { definition: guarded([]) }],
        ['GET', T],
        ['GET', `${T}/x-name`],
        ['PATCH', `${T}/x-name`, { description: 'x' }],
        ['DELETE', `${T}/x-name`],
        ['POST', `${T}/x-name/run`, {}],
      ];
      for (const [method, path, body] of routes) {
        const reply = await api.call(method, path, body);
        expect([method, path, reply.status]).toEqual([method, path, 403]);
        conforms(method, path === T ? T : path.replace('x-name', '{ref}'), reply);
      }
    });

    it("when a tenant names another tenant's template by id or name, then 404 on every route, and the name is its own to take", async () => {
      const owner = await tenant();
      const other = await tenant();
      const made = await registered(owner.api, { name: 'shared-name', definition: guarded([]) });

      for (const ref of [made.template_id, 'shared-name']) {
        expect((await get(other.api, ref)).status).toBe(404);
        expect((await patch(other.api, ref, { description: 'x' })).status).toBe(404);
        expect((await run(other.api, ref)).status).toBe(404);
        expect((await remove(other.api, ref)).status).toBe(404);
      }
      expect((await list(other.api)).body.templates).toEqual([]);
      await registered(other.api, { name: 'shared-name', definition: guarded([]) });
      expect((await get(owner.api, 'shared-name')).body.template_id).toBe(made.template_id);
      expect(await count('workflows', other.tenantId)).toBe(0);
    });
  });

  it('checked a real answer of every template operation against the document', () => {
    const documented = Object.entries(openApiDocument.paths)
      .filter(([path]) => TEMPLATE_PATH.test(path))
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented).toHaveLength(6);
    expect(documented.filter((op) => !checked.has(op))).toEqual([]);
  });
});
