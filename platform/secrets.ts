import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Values kept encrypted at rest (a template run's secret parameters): AES-256-GCM under a 32-byte
 * key from configuration (RUNS_SECRETS_KEY), as one text `v1:<iv>:<tag>:<ciphertext>` (each
 * base64). A fresh 12-byte IV per value; the 16-byte tag authenticates the ciphertext and the
 * `context` (additional data, e.g. the workflow id and the parameter's name), so a ciphertext
 * copied to another row, altered, or opened with another key fails to decrypt.
 */

export const SECRETS_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const ALGORITHM = 'aes-256-gcm';
const FORMAT_VERSION = 'v1';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A ciphertext that is malformed, altered, bound to another context, or under another key. */
export class SecretDecryptionError extends Error {
  constructor(reason: string) {
    super(`secret cannot be decrypted: ${reason}`);
    this.name = 'SecretDecryptionError';
  }
}

/** RUNS_SECRETS_KEY: base64 of exactly 32 bytes; null when it is not that. */
export function parseSecretsKey(base64: string): Buffer | null {
  const text = base64.trim();
  if (!BASE64.test(text)) return null;
  const key = Buffer.from(text, 'base64');
  return key.length === SECRETS_KEY_BYTES ? key : null;
}

function assertKey(key: Buffer): void {
  if (key.length !== SECRETS_KEY_BYTES)
    throw new Error(`a secrets key is ${SECRETS_KEY_BYTES} bytes, not ${key.length}`);
}

/** `plaintext` encrypted under `key`, bound to `context` (the same must be given to decrypt). */
export function encryptSecret(key: Buffer, plaintext: string, context = ''): string {
  assertKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [FORMAT_VERSION, iv, tag, ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64')))
    .join(':');
}

/** The plaintext of `encrypted`; SecretDecryptionError when it cannot be trusted. */
export function decryptSecret(key: Buffer, encrypted: string, context = ''): string {
  assertKey(key);
  const parts = encrypted.split(':');
  if (parts.length !== 4 || parts[0] !== FORMAT_VERSION)
    throw new SecretDecryptionError('not a v1 ciphertext');
  const [iv, tag, ciphertext] = parts.slice(1).map((part) => {
    if (!BASE64.test(part)) throw new SecretDecryptionError('not base64');
    return Buffer.from(part, 'base64');
  }) as [Buffer, Buffer, Buffer];
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES)
    throw new SecretDecryptionError('bad iv or tag length');
  const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretDecryptionError('authentication failed (altered, another key or context)');
  }
}

/** The context a workflow's secret parameter is bound to (workflow_secrets rows). */
export const workflowSecretContext = (workflowId: string, name: string): string =>
  `workflow_secrets/${workflowId}/${name}`;

/** A secret parameter of a template run, encrypted for its workflow_secrets row. */
export const encryptWorkflowSecret = (
  key: Buffer,
  workflowId: string,
  name: string,
  value: string,
): string => encryptSecret(key, value, workflowSecretContext(workflowId, name));

/** The value of a workflow_secrets row (the engine, at node launch). */
export const decryptWorkflowSecret = (
  key: Buffer,
  workflowId: string,
  name: string,
  ciphertext: string,
): string => decryptSecret(key, ciphertext, workflowSecretContext(workflowId, name));
