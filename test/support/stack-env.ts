import fs from 'node:fs';
import path from 'node:path';
import { TEST_PAYLOAD_KEYS } from './payload-keys';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const DATA_DIR = process.env.STACK_DATA_DIR ?? path.join(REPO_ROOT, '.data');

/**
 * Applies the settings `scripts/stack up` resolved (in .data/stack.env) to process.env,
 * without overriding anything already set, so tests talk to the stack that is running; the
 * Temporal payload keys are always the tests' own (test/support/payload-keys.ts).
 */
export function loadStackEnv(): void {
  const file = path.join(DATA_DIR, 'stack.env');
  if (!fs.existsSync(file)) return;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const match = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (!match) continue;
    const [, key, raw] = match as unknown as [string, string, string];
    // printf %q's quoting: a quoted value as it is, an unquoted one without its backslashes.
    const quoted = /^(['"])(.*)\1$/.exec(raw);
    const value = quoted ? quoted[2]! : raw.replace(/\\(.)/g, '$1');
    if (process.env[key] === undefined) process.env[key] = value;
  }
  useStackSecretsKey();
  process.env.TEMPORAL_PAYLOAD_KEYS = TEST_PAYLOAD_KEYS;
}

/**
 * The data dir's own RUNS_SECRETS_KEY (scripts/stack makes it once), when stack.env predates it:
 * the in-process services and the test worker (which inherits this environment) decrypt alike.
 */
function useStackSecretsKey(): void {
  const file = path.join(DATA_DIR, 'runs-secrets.key');
  if (process.env.RUNS_SECRETS_KEY || !fs.existsSync(file)) return;
  process.env.RUNS_SECRETS_KEY = fs.readFileSync(file, 'utf8').trim();
}
