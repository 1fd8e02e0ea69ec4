import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../../platform/config';
import { namedImages } from '../../support/images';

/**
 * docker-compose.yml's structure against the repository, in a second (it runs for real in
 * test/integration/platform/compose.test.ts): every service present, dependencies resolvable, each
 * app command pointing at a file the build emits, the documented ports published, no secret with
 * a value in the file, each image it pulls one that deploy/offline-images can stand in for.
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

const text = fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
const compose = parse(text, { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;
const APP_SERVICES = ['migrate', 'metering-keys', 'ledger-api', 'runs-api', 'quota-api', 'worker'];

/** ${VAR:-default} as compose substitutes it with no .env beside it (innermost first). */
const withDefaults = (value: string): string => {
  let substituted = value;
  for (let previous = ''; previous !== substituted;) {
    previous = substituted;
    substituted = substituted.replace(/\$\{[A-Z_]+:-([^${}]*)\}/g, '$1');
  }
  return substituted;
};

/** A value of the right shape for each secret compose requires (${VAR:?...}). */
const SAMPLE_SECRETS: Record<string, string> = {
  PLATFORM_DB_PASSWORD: 'sample',
  RUNS_SECRETS_KEY: Buffer.alloc(32, 1).toString('base64'),
  TEMPORAL_PAYLOAD_KEYS: `2026-12:${Buffer.alloc(32, 2).toString('base64')}`,
};

describe('docker-compose.yml', () => {
  it('describes the whole topology', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'ledger-api',
        'metering-keys',
        'migrate',
        'postgres',
        'quota-api',
        'redis',
        'registry',
        'runs-api',
        'temporal',
        'temporal-schema',
        'temporal-setup',
        'temporal-ui',
        'worker',
      ].sort(),
    );
  });

  it('depends only on services it defines, and no app process starts before the migrations', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const dependency of Object.keys(service.depends_on ?? {})) {
        expect([name, dependency, dependency in services]).toEqual([name, dependency, true]);
      }
    }
    for (const name of APP_SERVICES.filter((n) => n !== 'migrate'))
      expect([name, services[name]!.depends_on?.migrate?.condition]).toEqual([
        name,
        'service_completed_successfully',
      ]);
  });

  it.each([
    ['migrate', 'db/migrate.ts'],
    ['metering-keys', 'cli/platform-metering.ts'],
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
    const published = (name: string) => services[name]!.ports?.map(withDefaults);
    expect(published('ledger-api')).toEqual(['8083:8083']);
    expect(published('runs-api')).toEqual(['8082:8082']);
    expect(published('quota-api')).toEqual(['8081:8081']);
    expect(published('temporal-ui')).toEqual(['8233:8080']);
    expect(published('registry')).toEqual(['127.0.0.1:5000:5000']);
  });

  it('registers the same search attributes as the local stack', () => {
    const mounts = services['temporal-setup']!.volumes ?? [];
    expect(mounts).toContain(
      './scripts/search-attributes.txt:/etc/platform/search-attributes.txt:ro',
    );
    for (const mount of [...mounts, ...(services['temporal-schema']!.volumes ?? [])]) {
      const hostPath = mount.split(':')[0]!;
      expect([hostPath, fs.existsSync(path.join(ROOT, hostPath))]).toEqual([hostPath, true]);
    }
  });

  it('gives no secret a value: each is required from .env', () => {
    for (const name of [
      'POSTGRES_PASSWORD',
      'PLATFORM_DB_PASSWORD',
      'TEMPORAL_DB_PASSWORD',
      'RUNS_SECRETS_KEY',
      'TEMPORAL_PAYLOAD_KEYS',
    ]) {
      const uses = [...text.matchAll(new RegExp(`\\$\\{${name}(:?[-?])`, 'g'))].map((m) => m[1]);
      expect([name, uses.length > 0, uses.every((u) => u === ':?')]).toEqual([name, true, true]);
    }
  });

  it('pulls only images that deploy/offline-images makes a stand-in for where none can be pulled', () => {
    const standIns = namedImages();
    const pulled = Object.values(services)
      .filter((s) => s.build === undefined)
      .map((s) => withDefaults(s.image!));
    expect(pulled.filter((image) => !standIns.includes(image))).toEqual([]);
    const base = /^FROM (\S+)/gm;
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    for (const [, image] of dockerfile.matchAll(base)) expect(standIns).toContain(image);
  });

  it.each(APP_SERVICES)(
    "gives %s an environment the processes' configuration accepts, its secrets mounted where it reads them",
    (name) => {
      const service = services[name]!;
      const env = Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([key, value]) => [
          key,
          withDefaults(String(value)).replace(
            /\$\{([A-Z_]+):\?[^}]*\}/g,
            (_, secret: string) => SAMPLE_SECRETS[secret] ?? `sample-${secret}`,
          ),
        ]),
      );
      expect(Object.keys(env).filter((key) => !CONFIG_VARIABLES.includes(key))).toEqual([]);
      // a secret read from a file: the file is in a volume this service mounts
      const targets = (service.volumes ?? []).map((volume) => volume.split(':')[1]!);
      for (const [key, file] of Object.entries(env).filter(([key]) => key.endsWith('_FILE'))) {
        expect([key, targets.some((target) => file.startsWith(`${target}/`))]).toEqual([key, true]);
        delete env[key];
      }
      expect(() => loadConfig(env)).not.toThrow();
    },
  );

  it('gives the worker the Docker socket of its host', () => {
    expect(services.worker!.volumes).toContain('/var/run/docker.sock:/var/run/docker.sock');
  });
});
