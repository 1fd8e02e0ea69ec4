/** What every service takes as a webhook target url (the egress rules judge it again at send). */

export const WEBHOOK_URL_MAX_LENGTH = 2048;

const CONTROL_CHARACTERS = '\\u0000-\\u0020\\u007f';
/**
 * Absolute https (the scheme in any case), an authority without userinfo (no '@'; no '\', which
 * WHATWG parsers read as '/'), no whitespace or control character anywhere. The document states
 * it, and a url that matches must also parse (a port in range, a valid host name).
 */
export const WEBHOOK_URL_PATTERN =
  `^[Hh][Tt][Tt][Pp][Ss]://[^${CONTROL_CHARACTERS}/?#@\\\\]+` +
  `(?:[/?#][^${CONTROL_CHARACTERS}]*)?$`;
const URL_SHAPE = new RegExp(WEBHOOK_URL_PATTERN, 'u');

export function isWebhookUrl(value: string): boolean {
  if (!URL_SHAPE.test(value)) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}
