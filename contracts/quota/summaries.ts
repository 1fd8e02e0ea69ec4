import {
  code,
  oneLine,
  platformSummary,
  summary,
  type ExecutionSummary,
} from '../shared/summaries';

/**
 * The quota service's executions as a person sees them in the Web UI (contracts/shared/
 * summaries.ts says what is never shown). Pure.
 */

/**
 * The domain of an e-mail address, never its local part (personal data): `ops@example.com` is
 * shown as `@example.com`; anything without one as `(unknown)`.
 */
export function recipientDomain(recipient: string): string {
  const at = recipient.lastIndexOf('@');
  const domain = at < 0 ? '' : recipient.slice(at + 1).trim();
  return domain && !/\s/.test(domain) ? `@${oneLine(domain, 60)}` : '(unknown)';
}

/** An alert mail (alert-mail/<id>): the recipient's domain and the alert rule. */
export function alertMailSummary(m: {
  mailId: string;
  tenantId: string;
  recipient: string;
  ruleId: string | null;
}): ExecutionSummary {
  const rule = m.ruleId === null ? '' : ` · rule ${oneLine(m.ruleId, 40)}`;
  return summary(
    `alert mail to ${recipientDomain(m.recipient)}${rule} · tenant ${oneLine(m.tenantId, 40)}`,
    [
      `**Alert mail** ${code(m.mailId)}`,
      `- Recipient: ${code(recipientDomain(m.recipient))} (the address itself is not shown: personal data)`,
      `- Alert rule: ${m.ruleId === null ? 'unknown' : code(m.ruleId)}`,
      `- Tenant: ${code(m.tenantId)}`,
    ],
  );
}

/** A tenant's bootstrap (quota-bootstrap/<tenant_id>). */
export const bootstrapSummary = (tenantId: string): ExecutionSummary =>
  summary(`quota bootstrap of tenant ${oneLine(tenantId, 60)}`, [
    `**Quota bootstrap** of tenant ${code(tenantId)}: grants its starting quotas`,
  ]);

/** A quota job's run (quota-job/<job>/<run>), by its schedule or by an operator. */
export const jobSummary = (job: string, trigger: 'schedule' | 'manual'): ExecutionSummary =>
  platformSummary(
    `quota job ${oneLine(job, 40)} (${trigger})`,
    `The quota job ${oneLine(job, 40)}, run ${trigger === 'schedule' ? 'by its schedule' : 'now by an operator'} (platform).`,
  );
