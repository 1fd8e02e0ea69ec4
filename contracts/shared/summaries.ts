/**
 * What an execution shows a person in the Temporal Web UI: its static summary (one line, in the
 * list and on the execution's page) and static details (a few lines of markdown, the User
 * Metadata tab), set at every start. Pure, so the API and the sandboxed workflow bundle share it.
 *
 * NEVER A SECRET, whatever the input: no env values (names at most), no webhook secret or URL,
 * no template secret parameter, no e-mail address (a mail's recipient domain only), and of a
 * command only its first argument (bounded) and how many more there are: arguments carry
 * credentials too (`sh -c "curl -H 'Authorization: …'"`). Every value is bounded in length.
 */
export interface ExecutionSummary {
  staticSummary: string;
  staticDetails: string;
}

/** The summary line's bound (the Web UI's list shows about this much). */
export const SUMMARY_MAX_CHARS = 160;
/** One value's bound in the summary or the details (an image reference, a name, an id). */
export const VALUE_MAX_CHARS = 80;
/** The details' bound. */
export const DETAILS_MAX_CHARS = 2_000;

/** One line, whitespace collapsed, at most `max` characters (an ellipsis marks a cut). */
export function oneLine(text: string, max: number = VALUE_MAX_CHARS): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, Math.max(0, max - 1))}…`;
}

/** Free text in markdown, its markup characters escaped (a DAG's name renders as typed). */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()<>#+\-.!|~]/g, (c) => `\\${c}`);
}

/** A value as inline code, on one bounded line (a backtick inside would end the span). */
export function code(value: string, max: number = VALUE_MAX_CHARS): string {
  return `\`${oneLine(value, max).replace(/`/g, "'")}\``;
}

/** A summary and its details, each within its bound. */
export function summary(line: string, details: string[]): ExecutionSummary {
  const text = details.join('\n');
  return {
    staticSummary: oneLine(line, SUMMARY_MAX_CHARS),
    staticDetails:
      text.length <= DETAILS_MAX_CHARS ? text : `${text.slice(0, DETAILS_MAX_CHARS - 1)}…`,
  };
}

/** A long id shortened for the summary line (the details carry it whole). */
export const shortId = (id: string, keep = 8): string =>
  id.length <= keep + 1 ? id : `${id.slice(0, keep)}…`;

/** A webhook delivery (delivery/runs|quota/<id>): its event type and endpoint, never its URL. */
export function deliverySummary(d: {
  service: 'runs' | 'quota';
  deliveryId: string;
  tenantId: string;
  endpointId: string;
  eventType: string | null;
}): ExecutionSummary {
  const event = d.eventType ?? 'event';
  return summary(
    `webhook ${oneLine(event, 60)} → endpoint ${oneLine(d.endpointId, 40)} · tenant ${oneLine(d.tenantId, 40)}`,
    [
      `**Webhook delivery** ${code(d.deliveryId)} of the ${d.service} service`,
      `- Event type: ${d.eventType === null ? 'unknown' : code(d.eventType)}`,
      `- Endpoint: ${code(d.endpointId)} (its URL and secret are not shown)`,
      `- Tenant: ${code(d.tenantId)}`,
      `- State: the \`DeliveryState\` search attribute once it ends (delivered, dead)`,
    ],
  );
}

/** An operator's periodic or one-off execution: one line, and what it does. */
export function platformSummary(line: string, what: string): ExecutionSummary {
  return summary(line, [`**${escapeMarkdown(oneLine(line))}**`, '', escapeMarkdown(what)]);
}
