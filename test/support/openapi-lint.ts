import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export interface LintProblem {
  severity: string;
  rule: string;
  message: string;
  where?: string;
}

/**
 * The problems Redocly's recommended rules find in an OpenAPI document. Runs lint-openapi.mjs
 * in its own process: @redocly/openapi-core is ESM-only and jest runs CommonJS.
 */
export async function lintOpenApi(document: unknown): Promise<LintProblem[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
  const file = path.join(dir, 'openapi.json');
  try {
    fs.writeFileSync(file, JSON.stringify(document));
    const { stdout } = await promisify(execFile)(process.execPath, [
      path.join(__dirname, 'lint-openapi.mjs'),
      file,
    ]);
    return JSON.parse(stdout) as LintProblem[];
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
