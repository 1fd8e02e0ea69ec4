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

/**
 * The sh block after `marker` (exactly one in `file`), and the text block that follows it when
 * the README says what it prints ("It prints" right after the block; else prints is '').
 */
export function markedCalls(file: string, marker: string): FirstCalls {
  const readme = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const parts = readme.split(marker);
  if (parts.length !== 2) throw new Error(`want exactly one "${marker}" marker in ${file}`);
  const block = /```sh\n([\s\S]*?)```/.exec(parts[1]!);
  if (!block) throw new Error(`the marker "${marker}" is not followed by an sh block`);
  const after = parts[1]!.slice(block.index + block[0].length);
  const prints = /^\s*It prints\b(?:(?!```)[\s\S])*```text\n([\s\S]*?)```/.exec(after);
  return { script: block[1]!, prints: prints?.[1] ?? '' };
}

/** The script pasted into bash in `cwd` (the clone's root), as a reader runs it. */
export function runBash(
  script: string,
  env: NodeJS.ProcessEnv,
  cwd = REPO_ROOT,
  timeoutMs = 180_000,
) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'bash',
      ['-c', `set -euo pipefail\n${script}`],
      { cwd, env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
