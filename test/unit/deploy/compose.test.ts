import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../../platform/config';

/**
 * docker-compose.yml cannot run here (no image can be pulled), so its structure is checked
 * against the repository: every service present, dependencies resolvable, each app command
 * pointing at a file the build really emits, the documented ports published.
 */
const ROOT = path.resolve(__dirname, '..', '..', '..');

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, unknown>;
}

const compose = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), {
  merge: true,
}) as {
  services: Record<string, ComposeService>;
};
const services = compose.services;

describe('docker-compose.yml', () => {
  it('describes the whole topology', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'ledger-api',
        'migrate',
        'postgres',
        'quota-api',
        'redis',
        'registry',
        'runs-api',
        'temporal',
        'temporal-setup',
        'temporal-ui',
        'worker',
      ].sort(),
    );
  });

  it('depends only on services it defines', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const dependency of Object.keys(service.depends_on ?? {})) {
        expect([name, dependency, dependency in services]).toEqual([name, dependency, true]);
      }
    }
  });

  it.each([
    ['migrate', 'db/migrate.ts'],
    ['ledger-api', 'api/main.ts'],
    ['runs-api', 'api/main.ts'],
    ['quota-api', 'api/main.ts'],
    ['worker', 'worker/main.ts'],
  ])(
    'runs %s from the image built here, with an entry point the build emits (%s)',
    (name, source) => {
      const service = services[name]!;
      expect(service.build).toBeDefined();
      const [node, script] = service.command ?? [];
      expect(node).toBe('node');
      expect(script).toBe(`dist/${source.replace(/\.ts$/, '.js')}`);
      expect(fs.existsSync(path.join(ROOT, source))).toBe(true);
    },
  );

  it('names each API its service and publishes the documented ports', () => {
    expect(services['ledger-api']!.command?.[2]).toBe('ledger');
    expect(services['runs-api']!.command?.[2]).toBe('runs');
    expect(services['quota-api']!.command?.[2]).toBe('quota');
    const published = (name: string) =>
      services[name]!.ports?.map((p) => p.replace(/\$\{[A-Z_]+:-(\d+)\}/, '$1'));
    expect(published('ledger-api')).toEqual(['8083:8083']);
    expect(published('runs-api')).toEqual(['8082:8082']);
    expect(published('quota-api')).toEqual(['8081:8081']);
    expect(published('temporal-ui')).toEqual(['8233:8080']);
  });

  it('registers the same search attributes as the local stack', () => {
    const mounts = services['temporal-setup']!.volumes ?? [];
    expect(mounts).toContain(
      './scripts/search-attributes.txt:/etc/platform/search-attributes.txt:ro',
    );
    for (const mount of mounts) {
      const hostPath = mount.split(':')[0]!;
      expect([hostPath, fs.existsSync(path.join(ROOT, hostPath))]).toEqual([hostPath, true]);
    }
  });

  it.each(['migrate', 'ledger-api', 'runs-api', 'quota-api', 'worker'])(
    "gives %s an environment the processes' configuration accepts, with its defaults substituted",
    (name) => {
      // ${VAR:-default} as compose substitutes it with no .env beside it.
      const env = Object.fromEntries(
        Object.entries(services[name]!.environment ?? {}).map(([key, value]) => [
          key,
          String(value).replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1'),
        ]),
      );
      expect(Object.keys(env).filter((key) => !CONFIG_VARIABLES.includes(key))).toEqual([]);
      expect(() => loadConfig(env)).not.toThrow();
    },
  );

  it('gives the worker the Docker socket of its host', () => {
    expect(services.worker!.volumes).toContain('/var/run/docker.sock:/var/run/docker.sock');
  });
});
