import type { RunSnapshot } from '../../../db/runs/deliveries';
import { TERMINAL_RUN_EVENTS } from './catalogue';

/**
 * The envelope of a webhook event (the spec's Envelope table), without its `delivery` block,
 * which each attempt adds. Built once per (subscription, event) when the event is published, so
 * every attempt and redelivery carries the same body apart from `delivery`.
 */
export interface Envelope {
  event_id: string;
  event_type: string;
  occurred_at: string;
  tenant_id: string;
  resource: { type: string; id: string };
  data: Record<string, unknown>;
  test?: true;
  truncated: boolean;
}

/** The bytes of result_summary kept in a run.terminal event: the last 1 KB of stdout. */
export const RESULT_SUMMARY_BYTES = 1024;
/** Room left for the `delivery` block each attempt adds. */
const DELIVERY_BLOCK_BYTES = 128;
const REDACTED = '[redacted]';

/** A run event's data: the run, its env redacted; a terminal event adds its result. */
export function runEventData(
  eventType: string,
  state: string,
  run: RunSnapshot,
): Record<string, unknown> {
  const data: Record<string, unknown> = {
    track_id: run.track_id,
    state,
    name: run.name,
    tags: run.tags,
    image: run.image,
    submitted_at: run.submitted_at,
    started_at: run.started_at,
    finished_at: run.finished_at,
    workflow_id: run.workflow_id,
    node_ref: run.node_ref,
    env: Object.fromEntries(Object.keys(run.env).map((key) => [key, REDACTED])),
  };
  if (TERMINAL_RUN_EVENTS.includes(eventType))
    data.result = {
      exit_code: run.exit_code,
      duration_seconds:
        run.started_at && run.finished_at
          ? (Date.parse(run.finished_at) - Date.parse(run.started_at)) / 1000
          : null,
      stdout_bytes: Number(run.stdout_bytes),
      stderr_bytes: Number(run.stderr_bytes),
      result_summary: lastBytes(run.result_summary ?? '', RESULT_SUMMARY_BYTES),
    };
  return data;
}

/**
 * Fits an envelope in `maxBytes` (max_webhook_payload_bytes, the delivery block included) by
 * trimming, in order, result_summary, data.nodes, a node's output, then the rest of data; marks
 * it truncated when anything was trimmed.
 */
export function fitted(envelope: Envelope, maxBytes: number): Envelope {
  const fits = (e: Envelope) =>
    Buffer.byteLength(JSON.stringify(e), 'utf8') + DELIVERY_BLOCK_BYTES <= maxBytes;
  if (fits(envelope)) return envelope;
  const trims: ((data: Record<string, unknown>) => Record<string, unknown>)[] = [
    (data) => (data.result ? { ...data, result: { ...data.result, result_summary: '' } } : data),
    (data) => ('nodes' in data ? { ...data, nodes: [] } : data),
    (data) => ('output' in data ? { ...data, output: null } : data),
    (data) => pick(data, ['track_id', 'workflow_id', 'ref', 'state', 'timer_id', 'endpoint_id']),
  ];
  let trimmed: Envelope = { ...envelope, truncated: true };
  for (const trim of trims) {
    trimmed = { ...trimmed, data: trim(trimmed.data) };
    if (fits(trimmed)) break;
  }
  return trimmed;
}

function pick(data: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in data).map((k) => [k, data[k]]));
}

/** The last `max` bytes of a UTF-8 string, never splitting a character. */
function lastBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString('utf8');
}
