import { startTestService, type TestService } from '../../support/services';

/**
 * /docs on every service: the interactive reference (Swagger UI, from node_modules) reading the
 * service's own /openapi.json, its assets served by the service itself (offline), and nothing
 * else of the package reachable.
 */
describe('the API reference of every service', () => {
  const services: Record<string, TestService> = {};
  beforeAll(async () => {
    for (const name of ['ledger', 'runs', 'quota'] as const)
      services[name] = await startTestService(name);
  });
  afterAll(async () => {
    await Promise.allSettled(Object.values(services).map((s) => s.close()));
  });

  it.each(['ledger', 'runs', 'quota'])(
    '%s: /docs is an HTML page whose scripts and stylesheet the service serves, reading /openapi.json',
    async (name) => {
      const { url } = services[name]!;
      const page = await fetch(`${url}/docs`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await page.text();
      const assets = [...html.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)].map((m) => m[1]!);
      expect(assets.sort()).toEqual([
        '/docs/init.js',
        '/docs/swagger-ui-bundle.js',
        '/docs/swagger-ui.css',
      ]);
      for (const asset of assets) {
        const served = await fetch(`${url}${asset}`);
        expect([asset, served.status]).toEqual([asset, 200]);
        expect((await served.text()).length).toBeGreaterThan(10);
      }
      const init = await (await fetch(`${url}/docs/init.js`)).text();
      expect(init).toContain("url: '/openapi.json'");
      // A page for people, not an operation: no client is generated for it.
      const document = (await (await fetch(`${url}/openapi.json`)).json()) as {
        paths: Record<string, unknown>;
      };
      expect(Object.keys(document.paths)).not.toContain('/docs');
    },
  );

  it.each(['ledger', 'runs', 'quota'])(
    '%s: no other file of the package, and no path outside it, is served under /docs/',
    async (name) => {
      const { url } = services[name]!;
      for (const path of ['/docs/package.json', '/docs/index.html', '/docs/..%2Fpackage.json'])
        expect([path, (await fetch(`${url}${path}`)).status]).toEqual([path, 404]);
    },
  );
});
