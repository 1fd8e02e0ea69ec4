import fs from 'node:fs';
import path from 'node:path';

/**
 * The built tree (dist/) finds the repository root as the nearest package.json above it
 * (db/repository.ts). A compiled file that imports package.json makes tsc copy it into dist/,
 * which then passes for the root: `scripts/start` found no migrations there once. None may.
 */
const BUILT = ['api', 'activities', 'workflows', 'worker', 'db', 'bench', 'scripts'];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('the build', () => {
  it('has no compiled file importing package.json', () => {
    const root = path.resolve(__dirname, '../..');
    const importing = BUILT.flatMap((dir) => sources(path.join(root, dir))).filter((file) =>
      /from\s+['"][./]*package\.json['"]|require\(\s*['"][./]*package\.json['"]\s*\)/.test(
        fs.readFileSync(file, 'utf8'),
      ),
    );
    expect(importing.map((file) => path.relative(root, file))).toEqual([]);
  });
});
