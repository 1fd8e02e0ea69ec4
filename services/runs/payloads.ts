import Joi from 'joi';
import { labelledMessage } from '../../platform/joi-messages';
import { boundedText } from '../../platform/text';
import { runsError } from './errors';

/**
 * The opaque payload and the labels a timer or a schedule carries into its notice: one set of
 * bounds and one check for both.
 */

/** A payload's size, serialized compactly (JSON.stringify) in UTF-8: past it 422 payload_too_large. */
export const PAYLOAD_MAX_BYTES = 64 * 1024;
export const LABELS_MAX = 16;
export const LABEL_KEY_PATTERN = '^[a-z0-9_.-]{1,63}$';
export const LABEL_VALUE_MAX_LENGTH = 256;

/** Half of a surrogate pair alone: JSON may escape one (`"\ud800"`), which jsonb refuses. */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** Text jsonb cannot store: U+0000, or an unpaired surrogate. */
const unstorable = (text: string) => text.includes('\u0000') || UNPAIRED_SURROGATE.test(text);

/** Whether a JSON value holds, in a string or a key, text that jsonb cannot store. */
function holdsUnstorableText(value: unknown): boolean {
  if (typeof value === 'string') return unstorable(value);
  if (Array.isArray(value)) return value.some(holdsUnstorableText);
  if (value !== null && typeof value === 'object')
    return Object.entries(value).some(
      ([key, item]) => unstorable(key) || holdsUnstorableText(item),
    );
  return false;
}
const UNSTORABLE_MESSAGE = '{{#label}} must not contain U+0000 or an unpaired surrogate';

/** `payload`: any JSON value jsonb can store; its size is checked by payloadJsonOf (422). */
export const opaquePayload = (notice: string) =>
  Joi.any()
    .custom((value: unknown, helpers) =>
      holdsUnstorableText(value) ? helpers.message({ custom: UNSTORABLE_MESSAGE }) : value,
    )
    .description(
      `Any JSON value, opaque: delivered as given in ${notice}'s data.payload (object keys in jsonb order). At most ${PAYLOAD_MAX_BYTES} bytes as compact UTF-8 JSON, else 422 payload_too_large; no U+0000 or unpaired surrogate in a string or key (422). Default null.`,
    );

/** `labels`: a small string map, filtered by label_filter and delivered in the notice. */
export const labelMap = (notice: string) =>
  Joi.object()
    .pattern(new RegExp(LABEL_KEY_PATTERN), boundedText(LABEL_VALUE_MAX_LENGTH).allow(''))
    .max(LABELS_MAX)
    .custom((value: Record<string, string>, helpers) =>
      holdsUnstorableText(value) ? helpers.message({ custom: UNSTORABLE_MESSAGE }) : value,
    )
    .description(
      `At most ${LABELS_MAX} entries; keys ${LABEL_KEY_PATTERN}, values strings of at most ${LABEL_VALUE_MAX_LENGTH} characters (422). Filter with label_filter; delivered in ${notice}'s data.labels.`,
    );

/** `key=value`: a label key, '=', then the value (anything but U+0000; the rest after the first '='). */
const LABEL_SELECTOR_PATTERN = '^[a-z0-9_.-]{1,63}=[^\\u0000]*$';
const LABEL_SELECTOR = new RegExp(LABEL_SELECTOR_PATTERN, 'u');
const LABEL_SELECTOR_MAX_LENGTH = 63 + 1 + LABEL_VALUE_MAX_LENGTH;
/** label_filter occurrences one list may carry (as many as a row's labels). */
export const LABEL_FILTER_MAX = LABELS_MAX;

const labelSelector = () =>
  Joi.string()
    .custom((value: string, helpers) =>
      LABEL_SELECTOR.test(value) && [...value].length <= LABEL_SELECTOR_MAX_LENGTH
        ? value
        : labelledMessage(
            helpers,
            ` must be key=value: a label key (${LABEL_KEY_PATTERN}), '=', and a value, ${LABEL_SELECTOR_MAX_LENGTH} characters at most`,
          ),
    )
    .meta({
      'x-schema': { pattern: LABEL_SELECTOR_PATTERN, maxLength: LABEL_SELECTOR_MAX_LENGTH },
    });

/** `label_filter` of a list: the rows whose labels hold every key=value pair given. */
export const labelFilter = (rows: string) =>
  Joi.array()
    .items(labelSelector())
    .single()
    .max(LABEL_FILTER_MAX)
    .description(
      `key=value, repeatable (label_filter=a=1&label_filter=b=2): ${rows} whose labels hold every pair (the value is everything after the first '=', exact, commas included). At most ${LABEL_FILTER_MAX}.`,
    );

/** The payload as stored, or 422 payload_too_large past PAYLOAD_MAX_BYTES. */
export function payloadJsonOf(payload: unknown): string {
  const json = JSON.stringify(payload);
  const sizeBytes = Buffer.byteLength(json, 'utf8');
  if (sizeBytes > PAYLOAD_MAX_BYTES)
    throw runsError('payload_too_large', {
      details: { payload_bytes: sizeBytes, max_payload_bytes: PAYLOAD_MAX_BYTES },
    });
  return json;
}
