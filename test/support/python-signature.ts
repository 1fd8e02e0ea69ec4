import { execFileSync } from 'node:child_process';

/**
 * The runs webhook signature by an implementation that shares no code with ours: Python's hmac,
 * over the body's raw bytes (stdin), the key derived by the spec's rule (hex-decoded for a
 * generated secret, the secret's own bytes otherwise; argv gives back its bytes).
 */
const PYTHON_SIGNATURE = `
import hashlib, hmac, os, sys
secret, origin, timestamp = sys.argv[1:4]
key = bytes.fromhex(secret) if origin == "generated" else os.fsencode(secret)
body = sys.stdin.buffer.read()
print("sha256=" + hmac.new(key, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest())
`;

export function pythonSignature(
  secret: string,
  origin: string,
  timestamp: number | string,
  body: Buffer | string,
): string {
  return execFileSync('python3', ['-c', PYTHON_SIGNATURE, secret, origin, String(timestamp)], {
    input: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
    encoding: 'utf8',
  }).trim();
}
