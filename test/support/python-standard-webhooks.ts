import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { DATA_DIR } from './stack-env';

/**
 * Verifies a message by the Standard Webhooks scheme with the scheme's own Python library
 * (standardwebhooks, pinned in test/fuzz/requirements.txt; scripts/test installs it into
 * $STACK_DATA_DIR/venv): an implementation that shares no code with ours. Answers the parsed
 * payload, or throws with the library's reason.
 */
const VERIFY = `
import json, sys
from standardwebhooks.webhooks import Webhook
secret, headers = sys.argv[1], json.loads(sys.argv[2])
print(json.dumps(Webhook(secret).verify(sys.stdin.buffer.read(), headers)))
`;

const PYTHON = path.join(DATA_DIR, 'venv', 'bin', 'python');

export function verifyStandardWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: Buffer,
): unknown {
  const picked = Object.fromEntries(
    ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, headers[name]]),
  );
  const out = execFileSync(PYTHON, ['-c', VERIFY, secret, JSON.stringify(picked)], {
    input: body,
    encoding: 'utf8',
  });
  return JSON.parse(out) as unknown;
}
