import fs from 'node:fs';
import path from 'node:path';
import { openApiDocument as ledgerDocument } from '../../../api/ledger/openapi';
import { openApiDocument as quotaDocument } from '../../../api/quota/openapi';
import { openApiDocument as runsDocument } from '../../../api/runs/openapi';

/**
 * What a user names a release by: its licence and its version, each stated the same everywhere a
 * user or a tool reads it (the repository, the npm manifest, the Python SDK, the Helm chart, the
 * OpenAPI documents, the CHANGELOG).
 */
const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const manifest = JSON.parse(read('package.json')) as { version: string; license: string };
const pyproject = read('sdk/python/pyproject.toml');
const tomlString = (key: string) => new RegExp(`^${key} = "([^"]*)"$`, 'm').exec(pyproject)?.[1];

describe('a release a user can name', () => {
  it('is under the Apache License 2.0, stated as its SPDX id by every manifest and document', () => {
    expect(read('LICENSE')).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(manifest.license).toBe('Apache-2.0');
    expect(JSON.parse(read('sdk/typescript/package.json'))).toMatchObject({
      license: 'Apache-2.0',
    });
    // a Python distribution's licence file must lie beside its pyproject.toml (PEP 639)
    expect(read('sdk/python/LICENSE')).toBe(read('LICENSE'));
    expect(tomlString('license')).toBe('Apache-2.0');
    for (const document of [ledgerDocument, quotaDocument, runsDocument])
      expect(document.info).toMatchObject({
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      });
  });

  it('carries one version: the chart, both SDKs, the image and the CHANGELOG name the one package.json names', () => {
    const { version } = manifest;
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(/^appVersion: '?([^'\s]+)'?$/m.exec(read('deploy/helm/platform/Chart.yaml'))?.[1]).toBe(
      version,
    );
    expect(tomlString('version')).toBe(version);
    expect((JSON.parse(read('sdk/typescript/package.json')) as { version: string }).version).toBe(
      version,
    );
    expect(read('sdk/python/src/quota_client/_version.py')).toContain(`__version__ = "${version}"`);
    expect(read('CHANGELOG.md')).toContain(`## [${version}] - `);
    // the image's org.opencontainers.image.version label
    expect(/^ARG PLATFORM_VERSION=(\S+)$/m.exec(read('Dockerfile'))?.[1]).toBe(version);
  });
});
