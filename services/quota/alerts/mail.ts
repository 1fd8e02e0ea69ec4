import type { AlertEventRow } from '../../../db/quota/alert-events';

/**
 * An alert's e-mail: plain text, one per recipient, rendered when its event is recorded. The
 * subject line says what crossed; the body holds every field of the event, as its webhook's
 * `data` does, for a reader and for a mail filter.
 */

/** A subject line stays on one line and within what mail clients show. */
const SUBJECT_LINE_MAX = 200;

// eslint-disable-next-line no-control-regex -- what a header line must not carry
const oneLine = (text: string) => text.replace(/[\u0000-\u001f\u007f]+/g, ' ');

export function alertMail(
  event: AlertEventRow,
  ruleName: string,
): { subjectLine: string; bodyText: string } {
  const headline = `Quota alert "${oneLine(ruleName)}": ${oneLine(event.subject)} at ${event.usage_pct}% of ${event.policy_id}`;
  const subjectLine =
    headline.length <= SUBJECT_LINE_MAX ? headline : `${headline.slice(0, SUBJECT_LINE_MAX - 1)}…`;
  const bodyText = [
    `The usage of subject ${event.subject} crossed ${event.threshold_pct}% of the limit of policy ${event.policy_id} in its window ${event.window_id}: it is at ${event.usage_pct}%.`,
    '',
    `rule:          ${ruleName} (${event.rule_id})`,
    `subject:       ${event.subject}`,
    `policy:        ${event.policy_id}`,
    `window:        ${event.window_id}`,
    `threshold_pct: ${event.threshold_pct}`,
    `usage_pct:     ${event.usage_pct}`,
    `triggered_at:  ${event.triggered_at}`,
    `alert event:   ${event.id}`,
    '',
    'GET /v1/alert-events?subject=<subject> lists the events of this subject.',
    '',
  ].join('\n');
  return { subjectLine, bodyText };
}
