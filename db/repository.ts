import fs from 'node:fs';
import path from 'node:path';

/**
 * The repository root, found from the source tree or from the compiled one under dist/ (the
 * nearest package.json above this file: nothing under dist/ may import package.json, or tsc
 * copies it there and dist/ would pass for the root).
 */
export function repositoryRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the repository root from ' + __dirname);
    dir = parent;
  }
  return dir;
}

/** The platform's version, as package.json says. */
export function platformVersion(): string {
  const text = fs.readFileSync(path.join(repositoryRoot(), 'package.json'), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}
