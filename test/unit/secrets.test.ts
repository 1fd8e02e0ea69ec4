import { createDecipheriv, randomBytes } from 'node:crypto';
import { loadConfig } from '../../platform/config';
import {
  SecretDecryptionError,
  decryptSecret,
  decryptWorkflowSecret,
  encryptSecret,
  encryptWorkflowSecret,
  parseSecretsKey,
} from '../../platform/secrets';

const KEY = randomBytes(32);
const TEXT = 'pässwörd — 東京 🚀 "quoted" \\ back\nline';

/** Flips one bit of one base64 part (1 iv, 2 tag, 3 ciphertext) of a v1 ciphertext. */
function tamper(encrypted: string, part: 1 | 2 | 3): string {
  const parts = encrypted.split(':');
  const bytes = Buffer.from(parts[part]!, 'base64');
  bytes[0] = bytes[0]! ^ 0x01;
  parts[part] = bytes.toString('base64');
  return parts.join(':');
}

describe('encryptSecret and decryptSecret (AES-256-GCM, v1:<iv>:<tag>:<ciphertext>)', () => {
  it('when a value is encrypted, then it decrypts to itself under the same key and context', () => {
    const encrypted = encryptSecret(KEY, TEXT, 'ctx');

    expect(decryptSecret(KEY, encrypted, 'ctx')).toBe(TEXT);
    expect(decryptSecret(KEY, encryptSecret(KEY, ''), '')).toBe('');
  });

  it('when a value is encrypted, then the text is v1 with a 12-byte iv and a 16-byte tag, and never holds the value', () => {
    const encrypted = encryptSecret(KEY, 'hunter2-hunter2-hunter2');
    const [version, iv, tag, ciphertext] = encrypted.split(':');

    expect(version).toBe('v1');
    expect(Buffer.from(iv!, 'base64')).toHaveLength(12);
    expect(Buffer.from(tag!, 'base64')).toHaveLength(16);
    expect(Buffer.from(ciphertext!, 'base64')).toHaveLength(23);
    expect(encrypted).not.toContain('hunter2');
    expect(Buffer.from(ciphertext!, 'base64').toString('utf8')).not.toContain('hunter2');
  });

  it('when the same value is encrypted twice, then the ciphertexts differ (a fresh iv each time)', () => {
    expect(encryptSecret(KEY, TEXT)).not.toBe(encryptSecret(KEY, TEXT));
  });

  it('is plain AES-256-GCM: node:crypto alone opens it with the iv, tag and context', () => {
    const [, iv, tag, ciphertext] = encryptSecret(KEY, TEXT, 'ctx').split(':');
    const decipher = createDecipheriv('aes-256-gcm', KEY, Buffer.from(iv!, 'base64'));
    decipher.setAAD(Buffer.from('ctx'));
    decipher.setAuthTag(Buffer.from(tag!, 'base64'));
    const plain = Buffer.concat([
      decipher.update(Buffer.from(ciphertext!, 'base64')),
      decipher.final(),
    ]);

    expect(plain.toString('utf8')).toBe(TEXT);
  });

  it.each([
    ['the iv', 1],
    ['the tag', 2],
    ['the ciphertext', 3],
  ] as const)('when %s is altered, then decryption fails', (_what, part) => {
    const encrypted = encryptSecret(KEY, TEXT);

    expect(() => decryptSecret(KEY, tamper(encrypted, part))).toThrow(SecretDecryptionError);
  });

  it('when the key is another, then decryption fails', () => {
    const encrypted = encryptSecret(KEY, TEXT);

    expect(() => decryptSecret(randomBytes(32), encrypted)).toThrow(SecretDecryptionError);
  });

  it('when the context is another, then decryption fails (a ciphertext copied to another row)', () => {
    const encrypted = encryptWorkflowSecret(KEY, '01JWORKFLOWAAAAAAAAAAAAAAA', 'token', 's3cr3t');

    expect(decryptWorkflowSecret(KEY, '01JWORKFLOWAAAAAAAAAAAAAAA', 'token', encrypted)).toBe(
      's3cr3t',
    );
    expect(() =>
      decryptWorkflowSecret(KEY, '01JWORKFLOWBBBBBBBBBBBBBBB', 'token', encrypted),
    ).toThrow(SecretDecryptionError);
    expect(() =>
      decryptWorkflowSecret(KEY, '01JWORKFLOWAAAAAAAAAAAAAAA', 'other', encrypted),
    ).toThrow(SecretDecryptionError);
  });

  it.each([
    ['not v1', 'v2:AAAA:AAAA:AAAA'],
    ['too few parts', 'v1:AAAA:AAAA'],
    ['not base64', 'v1:!!!!:AAAA:AAAA'],
    [
      'a short iv',
      `v1:${Buffer.alloc(8).toString('base64')}:${Buffer.alloc(16).toString('base64')}:`,
    ],
    [
      'a short tag',
      `v1:${Buffer.alloc(12).toString('base64')}:${Buffer.alloc(8).toString('base64')}:`,
    ],
  ])('when the text is malformed (%s), then decryption fails', (_what, text) => {
    expect(() => decryptSecret(KEY, text)).toThrow(SecretDecryptionError);
  });

  it('when a key is not 32 bytes, then neither encrypts nor decrypts', () => {
    expect(() => encryptSecret(randomBytes(16), TEXT)).toThrow(/32 bytes/);
    expect(() => decryptSecret(randomBytes(33), encryptSecret(KEY, TEXT))).toThrow(/32 bytes/);
  });
});

describe('RUNS_SECRETS_KEY', () => {
  it('is the base64 of exactly 32 bytes', () => {
    const base64 = KEY.toString('base64');

    expect(parseSecretsKey(base64)).toEqual(KEY);
    expect(parseSecretsKey(randomBytes(31).toString('base64'))).toBeNull();
    expect(parseSecretsKey(randomBytes(33).toString('base64'))).toBeNull();
    expect(parseSecretsKey('not base64 at all!')).toBeNull();
  });

  it('when configured, then config.runs.secretsKey is its 32 bytes; when empty or absent, null', () => {
    expect(loadConfig({ RUNS_SECRETS_KEY: KEY.toString('base64') }).runs.secretsKey).toEqual(KEY);
    expect(loadConfig({ RUNS_SECRETS_KEY: '' }).runs.secretsKey).toBeNull();
    expect(loadConfig({}).runs.secretsKey).toBeNull();
  });

  it('when it is not 32 bytes, then the configuration fails naming it, without its value', () => {
    const bad = randomBytes(16).toString('base64');

    expect(() => loadConfig({ RUNS_SECRETS_KEY: bad })).toThrow(/RUNS_SECRETS_KEY/);
    expect(() => loadConfig({ RUNS_SECRETS_KEY: bad })).not.toThrow(bad);
  });
});
