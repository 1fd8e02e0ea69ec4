import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/**
 * Temporal payloads encrypted at rest: inputs, results, signals, updates, queries, memos,
 * activity payloads and static summaries leave every client and worker as AES-256-GCM
 * ciphertext under the deployment's active key (TEMPORAL_PAYLOAD_KEYS, first entry), so Temporal
 * and its Web UI hold nothing a run's env or a template secret could be read from. Search
 * attributes never pass through a codec and stay clear (our ids and states, never secrets);
 * failure messages stay clear too (ours, bounded), so an operator reads why a run failed.
 *
 * A payload is the whole original Payload (protobuf), encrypted; its metadata names the key id,
 * so keys rotate: a new key goes first, the old ones stay to decode what was written under them.
 * A payload without our encoding (a history from before encryption) decodes as itself.
 */

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
export const PAYLOAD_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface PayloadKey {
  id: string;
  key: Buffer;
}

/**
 * TEMPORAL_PAYLOAD_KEYS, `id:base64[,id:base64...]` (each key 32 bytes, ids unique): the keys,
 * the encrypting one first; a message saying what is wrong otherwise.
 */
export function parsePayloadKeys(text: string): PayloadKey[] | string {
  const keys: PayloadKey[] = [];
  for (const entry of text.split(',').map((e) => e.trim())) {
    const [id = '', base64 = '', ...rest] = entry.split(':');
    if (rest.length > 0 || !KEY_ID.test(id))
      return `each entry is id:base64 with an id of 1 to 64 of [A-Za-z0-9_.-] (got "${id}")`;
    const key = Buffer.from(base64, 'base64');
    if (!BASE64.test(base64) || key.length !== PAYLOAD_KEY_BYTES)
      return `the key of "${id}" is not the base64 of exactly ${PAYLOAD_KEY_BYTES} bytes`;
    if (keys.some((k) => k.id === id)) return `the key id "${id}" is given twice`;
    keys.push({ id, key });
  }
  return keys;
}

/** A payload that names a key this process does not hold, or whose ciphertext fails to open. */
export class PayloadDecryptionError extends Error {
  constructor(reason: string) {
    super(`payload cannot be decrypted: ${reason}`);
    this.name = 'PayloadDecryptionError';
  }
}

const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | null | undefined) =>
  bytes ? Buffer.from(bytes).toString('utf8') : undefined;

export const isEncrypted = (payload: Payload): boolean =>
  text(payload.metadata?.encoding) === ENCRYPTED_ENCODING;

export class EncryptionCodec implements PayloadCodec {
  private readonly active: PayloadKey;
  private readonly byId: ReadonlyMap<string, Buffer>;

  constructor(keys: PayloadKey[]) {
    if (!keys[0]) throw new Error('an encryption codec needs at least one key');
    this.active = keys[0];
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  // Synchronous work in a promise: a payload that cannot be decrypted rejects, never throws.
  encode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) => resolve(payloads.map((p) => this.encrypt(p))));
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) =>
      resolve(payloads.map((p) => (isEncrypted(p) ? this.decrypt(p) : p))),
    );
  }

  private encrypt(payload: Payload): Payload {
    const { id, key } = this.active;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    // The key id is bound as additional data: a payload relabelled with another id fails.
    cipher.setAAD(Buffer.from(id, 'utf8'));
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(id) },
      data: sealed,
    };
  }

  private decrypt(payload: Payload): Payload {
    const id = text(payload.metadata?.[KEY_ID_METADATA]);
    const key = id === undefined ? undefined : this.byId.get(id);
    if (id === undefined || !key)
      throw new PayloadDecryptionError(`no key "${id ?? '(none named)'}" is configured`);
    const sealed = Buffer.from(payload.data ?? []);
    if (sealed.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError('too short');
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(Buffer.from(id, 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([
        decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new PayloadDecryptionError(`authentication failed under key "${id}"`);
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}

/** Without keys payloads are in clear: what the codec endpoint answers them with then. */
const CLEAR: PayloadCodec = {
  encode: (payloads) => Promise.resolve(payloads),
  decode: (payloads) => Promise.resolve(payloads),
};

/** The deployment's codec: encrypting when keys are configured, payloads as they are without. */
export const payloadCodec = (keys: PayloadKey[]): PayloadCodec =>
  keys.length > 0 ? new EncryptionCodec(keys) : CLEAR;

/** The data converter of every client and worker: encrypting when keys are configured. */
export function payloadDataConverter(keys: PayloadKey[]): DataConverter {
  return keys.length > 0 ? { payloadCodecs: [payloadCodec(keys)] } : {};
}
