import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  KEY_ID_METADATA,
  PayloadDecryptionError,
  parsePayloadKeys,
  payloadCodec,
  type PayloadKey,
} from '../../../platform/payload-codec';
import { loadConfig } from '../../../platform/config';

const key = (id: string, bytes = randomBytes(32)): PayloadKey => ({ id, key: bytes });
const entry = (k: PayloadKey) => `${k.id}:${k.key.toString('base64')}`;
const input = { image: 'busybox', env: { TOKEN: 'hunter2-secret-value' } };
const payload = (): Payload => defaultPayloadConverter.toPayload(input);
const meta = (p: Payload, name: string) => Buffer.from(p.metadata?.[name] ?? []).toString('utf8');
const value = (p: Payload) => defaultPayloadConverter.fromPayload(p);

describe('the payload codec (AES-256-GCM, key ids)', () => {
  const old = key('2026-01');
  const fresh = key('2026-11');

  it('encrypts a payload whole: the encoding and key id in clear, nothing of the value', async () => {
    const [sealed] = await new EncryptionCodec([old]).encode([payload()]);
    expect(meta(sealed!, 'encoding')).toBe(ENCRYPTED_ENCODING);
    expect(meta(sealed!, KEY_ID_METADATA)).toBe('2026-01');
    expect(Object.keys(sealed!.metadata ?? {}).sort()).toEqual(['encoding', KEY_ID_METADATA]);
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.toContain('hunter2');
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.toContain('json/plain');
  });

  it('decodes what it encoded back to the same payload, metadata included', async () => {
    const codec = new EncryptionCodec([old]);
    const [decoded] = await codec.decode(await codec.encode([payload()]));
    expect(meta(decoded!, 'encoding')).toBe('json/plain');
    expect(value(decoded!)).toEqual(input);
  });

  it('never writes the same ciphertext twice (a fresh IV each time)', async () => {
    const codec = new EncryptionCodec([old]);
    const [a, b] = await codec.encode([payload(), payload()]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('after a rotation (new key first, old kept), decodes what the old key wrote and writes under the new', async () => {
    const [underOld] = await new EncryptionCodec([old]).encode([payload()]);
    const rotated = new EncryptionCodec([fresh, old]);
    expect(value((await rotated.decode([underOld!]))[0]!)).toEqual(input);
    const [underNew] = await rotated.encode([payload()]);
    expect(meta(underNew!, KEY_ID_METADATA)).toBe('2026-11');
  });

  it('refuses a payload under a key it does not hold, naming the key id', async () => {
    const [underOld] = await new EncryptionCodec([old]).encode([payload()]);
    await expect(new EncryptionCodec([fresh]).decode([underOld!])).rejects.toThrow(
      new PayloadDecryptionError('no key "2026-01" is configured'),
    );
  });

  it('refuses an altered ciphertext and a payload relabelled with another key id', async () => {
    const same = randomBytes(32);
    const codec = new EncryptionCodec([key('a', same), key('b', same)]);
    const [sealed] = await codec.encode([payload()]);
    const altered = Buffer.from(sealed!.data!);
    altered[20] = altered[20]! ^ 1;
    await expect(codec.decode([{ ...sealed, data: altered }])).rejects.toThrow(
      PayloadDecryptionError,
    );
    const relabelled = {
      ...sealed,
      metadata: { ...sealed!.metadata, [KEY_ID_METADATA]: Buffer.from('b') },
    };
    await expect(codec.decode([relabelled])).rejects.toThrow('authentication failed under key "b"');
    await expect(codec.decode([{ ...sealed, data: altered.subarray(0, 27) }])).rejects.toThrow(
      'too short',
    );
  });

  it('is the deployment codec with keys; without any, payloads stay as they are both ways', async () => {
    expect(payloadCodec([old])).toBeInstanceOf(EncryptionCodec);
    const clear = payload();
    expect(await payloadCodec([]).encode([clear])).toEqual([clear]);
    expect(await payloadCodec([]).decode([clear])).toEqual([clear]);
  });

  it('passes a payload written before encryption through unchanged', async () => {
    const clear = payload();
    expect(await new EncryptionCodec([old]).decode([clear])).toEqual([clear]);
  });
});

describe('TEMPORAL_PAYLOAD_KEYS', () => {
  const a = key('a');
  const b = key('b');

  it('lists the keys, the encrypting one first', () => {
    expect(parsePayloadKeys(`${entry(b)}, ${entry(a)}`)).toEqual([b, a]);
    const longestId = 'x'.repeat(64);
    expect(parsePayloadKeys(entry({ ...a, id: longestId }))).toEqual([{ ...a, id: longestId }]);
  });

  it.each([
    ['a key of 31 bytes', `a:${randomBytes(31).toString('base64')}`, 'exactly 32 bytes'],
    ['a key of 33 bytes', `a:${randomBytes(33).toString('base64')}`, 'exactly 32 bytes'],
    ['a key that is not base64', `a:${'*'.repeat(44)}`, 'exactly 32 bytes'],
    ['an id of 65 characters', entry({ ...a, id: 'x'.repeat(65) }), 'an id of 1 to 64'],
    ['an empty id', `:${a.key.toString('base64')}`, 'an id of 1 to 64'],
    ['an id twice', `${entry(a)},${entry({ ...b, id: 'a' })}`, '"a" is given twice'],
    ['an entry with two colons', `${entry(a)}:x`, 'each entry is id:base64'],
  ])('refuses %s', (_, text, message) => {
    expect(parsePayloadKeys(text)).toEqual(expect.stringContaining(message));
  });

  it('stops a process at start when malformed; empty means payloads in clear', () => {
    expect(() => loadConfig({ TEMPORAL_PAYLOAD_KEYS: 'a:short' })).toThrow(
      /TEMPORAL_PAYLOAD_KEYS.*exactly 32 bytes/,
    );
    expect(loadConfig({ TEMPORAL_PAYLOAD_KEYS: '' }).temporalPayloadKeys).toEqual([]);
    expect(loadConfig({ TEMPORAL_PAYLOAD_KEYS: entry(a) }).temporalPayloadKeys).toEqual([a]);
  });
});
