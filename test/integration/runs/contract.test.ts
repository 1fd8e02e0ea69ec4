import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { ulid } from 'ulid';
import { lintOpenApi } from '../../support/openapi-lint';
import { runAdmin } from '../../../cli/runs';
import { openApiDocument } from '../../../api/runs/openapi';
import { runsRoutes } from '../../../api/runs/app';
import { undocumentedRoutes } from '../../support/documented-routes';
import {
  IMAGE,
  client,
  config,
  newTenant,
  startHarness,
  type Harness,
  type Reply,
} from './support';

type Doc = {
  paths: Record<
    string,
    Record<
      string,
      {
        'x-permission'?: string;
        responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
      }
    >
  >;
};

/** Real responses of the runs API checked against the OpenAPI 3.1 document it serves. */
describe('the runs OpenAPI document', () => {
  let h: Harness;
  let doc: Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const checked: string[] = [];

  beforeAll(async () => {
    h = await startHarness();
    doc = (await (await fetch(`${h.service.url}/openapi.json`)).json()) as Doc;
    ajv.addSchema(doc, 'runs');
  });
  afterAll(async () => {
    await h?.close();
  });

  /** The reply's status must be documented for the operation, and its body must match. */
  function conforms(method: string, template: string, reply: Reply<unknown>): void {
    const operation = doc.paths[template]?.[method.toLowerCase()];
    expect([method, template, operation === undefined]).toEqual([method, template, false]);
    const response = operation!.responses[String(reply.status)];
    expect([method, template, reply.status, response === undefined]).toEqual([
      method,
      template,
      reply.status,
      false,
    ]);
    const schema = response!.content?.['application/json']?.schema;
    if (schema === undefined) {
      expect(reply.body).toBeNull();
    } else {
      const pointer = [
        'paths',
        template,
        method.toLowerCase(),
        'responses',
        String(reply.status),
        'content',
        'application/json',
        'schema',
      ]
        .map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1'))
        .join('/');
      const validate = ajv.getSchema(`runs#/${pointer}`)!;
      const ok = validate(reply.body);
      expect([method, template, reply.status, ok ? null : validate.errors]).toEqual([
        method,
        template,
        reply.status,
        null,
      ]);
    }
    checked.push(`${method} ${template} ${reply.status}`);
  }

  it('is OpenAPI 3.1 and its schemas compile', () => {
    expect(doc).toEqual(JSON.parse(JSON.stringify(openApiDocument)));
    expect((doc as unknown as { openapi: string }).openapi).toBe('3.1.0');
    for (const name of Object.keys(openApiDocument.components.schemas)) {
      expect(ajv.getSchema(`runs#/components/schemas/${name}`)).toBeDefined();
    }
  });

  it('describes every route the service serves', () => {
    // Routes are only listed here, never called: no backend is reached.
    const deps = { config, redis: { defineCommand: () => undefined } };
    const routers = runsRoutes(deps as never, {} as never);
    expect(routers.flatMap((router) => undocumentedRoutes(router, openApiDocument))).toEqual([]);
  });

  it("has no problem under Redocly's recommended rules", async () => {
    // The spec's own webhook paths are ambiguous to the rule: /webhooks/deliveries/{delivery_id}
    // and /webhooks/{endpoint_id}/<action> both match /webhooks/deliveries/<action>. No endpoint
    // id is "deliveries" (a ULID), and the delivery routes are mounted first, so those warnings
    // (the spec's three actions and recover, which follows their shape), and only those, stand.
    const specAmbiguity = (problem: { rule: string; message: string }) =>
      problem.rule === 'no-ambiguous-paths' &&
      /^Paths should resolve unambiguously\. Found two ambiguous paths: `\/api\/v1\/webhooks\/deliveries\/\{delivery_id\}` and `\/api\/v1\/webhooks\/\{endpoint_id\}\/(rotate-secret|test|deliveries|recover)`\.$/.test(
        problem.message,
      );
    const problems = await lintOpenApi(doc);
    expect(problems.filter(specAmbiguity)).toHaveLength(4);
    expect(problems.filter((problem) => !specAmbiguity(problem))).toEqual([]);
  });

  it('matches the real responses of every run route, success and refusal', async () => {
    const owner = await newTenant(h.pool);
    const api = client(h.service.url, owner.key);
    const R = '/api/v1/runs/{track_id}';

    conforms('POST', '/api/v1/runs', await api.submit({ image: 'nope' }));
    conforms('POST', '/api/v1/runs', await api.submit({ image: IMAGE, extra: 1 }));
    conforms(
      'POST',
      '/api/v1/runs',
      await api.submit({ image: IMAGE, expires_at: '2001-01-01T00:00:00Z' }),
    );
    conforms('POST', '/api/v1/runs', await client(h.service.url, null).submit({ image: IMAGE }));
    conforms(
      'POST',
      '/api/v1/runs',
      await client(
        h.service.url,
        (await newTenant(h.pool, { permissions: 'svc_run_read' })).key,
      ).submit({ image: IMAGE }),
    );
    const waiting = await api.submit({
      image: IMAGE,
      scheduled_start: '2999-01-01T00:00:00Z',
      name: 'later',
      tags: ['a'],
    });
    conforms('POST', '/api/v1/runs', waiting);
    const done = await api.submit({
      image: IMAGE,
      command: ['sh', '-c', 'echo out; echo err >&2; exit 2'],
    });
    await api.waitFor(done.body.track_id, ['failed']);
    const live = await api.submit({ image: IMAGE, command: ['sleep', '60'] });
    await api.waitFor(live.body.track_id, ['running']);

    const at = (id: string, suffix = '') => `/api/v1/runs/${id}${suffix}`;
    conforms('GET', R, await api.call('GET', at(waiting.body.track_id)));
    conforms('GET', R, await api.call('GET', at(done.body.track_id)));
    conforms('GET', R, await api.call('GET', at(ulid())));
    conforms('GET', `${R}/result`, await api.call('GET', at(done.body.track_id, '/result')));
    conforms('GET', `${R}/result`, await api.call('GET', at(waiting.body.track_id, '/result')));
    conforms('GET', `${R}/logs`, await api.call('GET', at(done.body.track_id, '/logs')));
    conforms('GET', `${R}/logs`, await api.call('GET', at(done.body.track_id, '/logs?limit=5000')));
    conforms('GET', `${R}/logs`, await api.call('GET', at(done.body.track_id, '/logs?tail=1')));
    conforms(
      'GET',
      `${R}/utilization`,
      await api.call('GET', at(live.body.track_id, '/utilization')),
    );
    conforms('POST', `${R}/pause`, await api.call('POST', at(live.body.track_id, '/pause')));
    conforms('POST', `${R}/pause`, await api.call('POST', at(live.body.track_id, '/pause')));
    conforms('POST', `${R}/resume`, await api.call('POST', at(live.body.track_id, '/resume')));
    conforms('POST', `${R}/stop`, await api.call('POST', at(waiting.body.track_id, '/stop')));
    conforms('POST', `${R}/kill`, await api.call('POST', at(live.body.track_id, '/kill')));
    conforms('DELETE', R, await api.call('DELETE', at(waiting.body.track_id)));
    conforms('DELETE', R, await api.call('DELETE', at(done.body.track_id)));
    conforms('GET', '/api/v1/runs', await api.call('GET', '/api/v1/runs?tag=a'));
    conforms('GET', '/api/v1/runs', await api.call('GET', '/api/v1/runs?state=x'));
    conforms('GET', '/api/v1/runs', await api.call('GET', '/api/v1/runs?limit=1001'));
  }, 60_000);

  it('matches the real responses of quotas, usage, audit and probes', async () => {
    const tier = `c-${ulid().toLowerCase().slice(-8)}`;
    await runAdmin(
      [
        'tier',
        'set',
        tier,
        '--metered',
        'true',
        '--metered-seconds-per-day',
        '3600',
        '--allowed-images',
        `${config.registryAddress}/`,
      ],
      h.pool,
    );
    const metered = client(h.service.url, (await newTenant(h.pool, { tier })).key);
    const plain = client(h.service.url, (await newTenant(h.pool)).key);
    conforms('GET', '/api/v1/tenant/quotas', await plain.call('GET', '/api/v1/tenant/quotas'));
    conforms(
      'PUT',
      '/api/v1/tenant/quotas',
      await plain.call('PUT', '/api/v1/tenant/quotas', { max_daily_runs: 1 }),
    );
    conforms(
      'PUT',
      '/api/v1/tenant/quotas',
      await plain.call('PUT', '/api/v1/tenant/quotas', { working_hours_tjp: 'nonsense' }),
    );
    await plain.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' });
    conforms(
      'POST',
      '/api/v1/runs',
      await plain.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' }),
    );
    conforms('GET', '/api/v1/usage', await plain.call('GET', '/api/v1/usage'));
    conforms('GET', '/api/v1/usage', await metered.call('GET', '/api/v1/usage'));
    conforms('POST', '/api/v1/runs', await metered.submit({ image: 'example.com/other:1' }));
    conforms('GET', '/api/v1/audit', await plain.call('GET', '/api/v1/audit'));
    conforms('GET', '/api/v1/audit', await metered.call('GET', '/api/v1/audit'));
    const health = await fetch(`${h.service.url}/health`);
    conforms('GET', '/health', {
      status: health.status,
      body: await health.json(),
      headers: health.headers,
    });
    const ping = await fetch(`${h.service.url}/ping`);
    conforms('GET', '/ping', {
      status: ping.status,
      body: await ping.json(),
      headers: ping.headers,
    });
  });

  it("matches the real responses of the operator's self-checks", async () => {
    // No key: an operator's diagnostic on a private network.
    const { call } = client(h.service.url, null);
    const S = '/api/v1/self-checks';
    const started = await call('POST', S, { image: IMAGE, command: ['true'] });
    conforms('POST', S, started);
    conforms('POST', S, await call('POST', S, { image: 'example.com/other:1' }));
    conforms('POST', S, await call('POST', S, { image: IMAGE, timeout_seconds: 601 }));
    const checkId = (started.body as { check_id: string }).check_id;
    conforms('GET', `${S}/{check_id}`, await call('GET', `${S}/${checkId}`));
    conforms('GET', `${S}/{check_id}`, await call('GET', `${S}/${ulid()}`));
  });

  it('covered every documented run operation', () => {
    const operations = new Set(checked.map((c) => c.split(' ').slice(0, 2).join(' ')));
    const documented = Object.entries(doc.paths)
      // The workflow operations are held to the document by workflows-api.test.ts, the webhook
      // operations (svc_webhook_*, /runs/{track_id}/deliveries too) by webhooks-api.test.ts, the
      // template operations (their triggers aside) by templates.test.ts.
      .filter(([p]) => p.startsWith('/api/v1') && !p.startsWith('/api/v1/workflows'))
      .filter(([p]) => !/^\/api\/v1\/templates(\/\{ref\}(\/run)?)?$/.test(p))
      // The timer operations are held to it by timers.test.ts.
      .filter(([p]) => !p.startsWith('/api/v1/timers'))
      // The schedule operations are held to it by schedules.test.ts.
      .filter(([p]) => !p.startsWith('/api/v1/schedules'))
      // The trigger operations (of a template too) are held to it by triggers.test.ts.
      .filter(([p]) => !p.startsWith('/api/v1/triggers') && !p.endsWith('/triggers'))
      .flatMap(([p, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => !String(op['x-permission']).startsWith('svc_webhook_'))
          .map(([m]) => `${m.toUpperCase()} ${p}`),
      );
    expect(documented.filter((o) => !operations.has(o))).toEqual([]);
  });
});
