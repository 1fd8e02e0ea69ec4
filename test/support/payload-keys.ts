import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { EncryptionCodec, parsePayloadKeys, type PayloadKey } from '../../platform/payload-codec';

/**
 * The payload keys of every test run (its in-process services and its worker), fixed and in the
 * repo unlike a data dir's own: histories recorded under them (test/histories/) replay anywhere.
 * A test key only, never a deployment's.
 */
export const TEST_PAYLOAD_KEYS = 'test-1:p2OTgnOTze4yC+vZufLNCylXTR21E8eD/Ly8NVVX8wo=';

export const testPayloadKeys = (): PayloadKey[] =>
  parsePayloadKeys(TEST_PAYLOAD_KEYS) as PayloadKey[];

/** The values of payloads read raw from a history, decrypted as a worker would. */
export async function payloadValues(payloads: Payload[]): Promise<unknown[]> {
  const decoded = await new EncryptionCodec(testPayloadKeys()).decode(payloads);
  return decoded.map((p) => defaultPayloadConverter.fromPayload(p));
}
