import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { isEncrypted } from '../../platform/payload-codec';

/**
 * The encrypted payloads of a raw history (fetched by a client without a codec), as the codec
 * sees them: a Payloads message's list (inputs, results, signal args) is one call, a lone
 * payload (a memo field, a header field, a static summary) another. Search attributes are
 * payloads too but never pass through a codec; they are clear, so they are not counted.
 */
export function encryptedPayloadGroups(history: unknown): Payload[][] {
  const groups: Payload[][] = [];
  const isPayload = (node: object): node is Payload =>
    'metadata' in node && (node as Payload).metadata != null && 'data' in node;
  const walk = (node: unknown): void => {
    if (node === null || typeof node !== 'object' || ArrayBuffer.isView(node)) return;
    if (Array.isArray(node)) {
      const payloads = (node as unknown[]).filter(
        (item): item is Payload => item !== null && typeof item === 'object' && isPayload(item),
      );
      if (payloads.length === node.length && payloads.length > 0) {
        const sealed = payloads.filter(isEncrypted);
        if (sealed.length > 0) groups.push(sealed);
        return;
      }
      (node as unknown[]).forEach(walk);
      return;
    }
    if (isPayload(node)) {
      if (isEncrypted(node)) groups.push([node]);
      return;
    }
    Object.values(node).forEach(walk);
  };
  walk(history);
  return groups;
}

export interface CodecCost {
  /** CPU µs per item (user + system of this process) of decoding its payloads, then of encoding them again. */
  decodeUs: number;
  encodeUs: number;
  payloadsPerItem: number;
  /** Protobuf bytes per item of its payloads in clear and as the codec wrote them. */
  clearBytesPerItem: number;
  sealedBytesPerItem: number;
  /** How many passes over all items the figures are the mean of. */
  passes: number;
}

const cpuUs = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};
const size = (p: Payload) => temporal.api.common.v1.Payload.encode(p).finish().length;

/**
 * The codec's own work on real payloads, in this process: every item's groups decoded (each group
 * one call, as a worker or client makes it) and the clear result encoded again, pass after pass
 * until `minCpuMs` of CPU is spent, after one pass to warm up. That is the encode once and decode
 * once each payload costs on its way through Temporal (a replay without the worker's cache, a
 * query, a remote decode by an operator would decode it again).
 */
export async function codecCost(
  codec: PayloadCodec,
  items: Payload[][][],
  minCpuMs: number,
): Promise<CodecCost> {
  const pass = async () => {
    const t0 = cpuUs();
    const clear: Payload[][][] = [];
    for (const groups of items) {
      const decoded: Payload[][] = [];
      for (const group of groups) decoded.push(await codec.decode(group));
      clear.push(decoded);
    }
    const t1 = cpuUs();
    for (const groups of clear) for (const group of groups) await codec.encode(group);
    return { decodeUs: t1 - t0, encodeUs: cpuUs() - t1, clear };
  };
  const { clear } = await pass();
  let passes = 0;
  let decodeUs = 0;
  let encodeUs = 0;
  while (passes < 3 || decodeUs + encodeUs < minCpuMs * 1000) {
    const figures = await pass();
    decodeUs += figures.decodeUs;
    encodeUs += figures.encodeUs;
    passes++;
  }
  const n = Math.max(1, items.length);
  const sum = (all: Payload[][][], f: (p: Payload) => number) =>
    all.flat(2).reduce((total, p) => total + f(p), 0);
  return {
    decodeUs: decodeUs / passes / n,
    encodeUs: encodeUs / passes / n,
    payloadsPerItem: sum(items, () => 1) / n,
    clearBytesPerItem: sum(clear, size) / n,
    sealedBytesPerItem: sum(items, size) / n,
    passes,
  };
}
