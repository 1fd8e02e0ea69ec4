import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './stack-env';

/** The services whose README has a "First calls" block. */
export const SERVICES = ['ledger', 'runs', 'quota'] as const;
export type Service = (typeof SERVICES)[number];

const MARKER = '<!-- first calls:';

export interface FirstCalls {
  script: string;
  prints: string;
}

/** The sh block after the service README's one marker, and the text block after it. */
export function firstCalls(service: Service): FirstCalls {
  return markedCalls(path.join('services', service, 'README.md'), MARKER);
}

/** The top README's metering walk-through (its "One platform" section). */
export const meteringCalls = (): FirstCalls => markedCalls('README.md', '<!-- metering calls:');

function markedCalls(file: string, marker: string): FirstCalls {
  const readme = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const parts = readme.split(marker);
  if (parts.length !== 2) throw new Error(`want exactly one "${marker}" marker in ${file}`);
  const found = /```sh\n([\s\S]*?)```[\s\S]*?```text\n([\s\S]*?)```/.exec(parts[1]!);
  if (!found) throw new Error('the marker is not followed by an sh block and a text block');
  return { script: found[1]!, prints: found[2]! };
}

/** The script pasted into bash at the clone's root, as a reader runs it. */
export function runBash(script: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'bash',
      ['-c', `set -euo pipefail\n${script}`],
      { cwd: REPO_ROOT, env, timeout: 180_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
