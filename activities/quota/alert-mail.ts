import { createTransport } from 'nodemailer';
import type { NodemailerError } from 'nodemailer/lib/errors';
import type { Config } from '../../platform/config';
import type { DatabasePool } from '../../db/pool';
import { beginMailAttempt, recordMailOutcome } from '../../db/quota/alert-mails';
import type { MailVerdict } from '../../contracts/quota/alert-mail';

export interface MailAttemptInput {
  mailId: string;
  /** Seconds until the next attempt, or null when this is the last one. */
  retryInSeconds: number | null;
}

/** What a recorded error keeps of the server's words. */
const ERROR_CHARS_MAX = 1000;
/** One SMTP exchange, connect to the reply to DATA, is bounded by these. */
const SMTP_TIMEOUTS_MS = {
  connectionTimeout: 15_000,
  greetingTimeout: 15_000,
  socketTimeout: 30_000,
};

/** The domain of an address in `Name <user@domain>` or `user@domain`. */
const domainOf = (from: string) => /@([^>\s]+)>?\s*$/.exec(from)?.[1] ?? 'localhost';

/**
 * One attempt of an alert mail, at least once: counts the attempt, sends the rendered message to
 * its one recipient through the configured SMTP server, and records the server's reply. A 5xx
 * reply is final (failed), as is a failure with no attempt left; a 4xx, a timeout or a refused
 * connection is retried. The Message-ID is the mail's own, so an attempt repeated after a crash
 * (sent, not yet recorded) reaches the reader as the same message.
 */
export function createAlertMailActivities(deps: { pool: DatabasePool; config: Config }) {
  const { smtpUrl, from } = deps.config.mail;
  const transport =
    smtpUrl === null ? null : createTransport({ url: smtpUrl, ...SMTP_TIMEOUTS_MS });
  const messageDomain = domainOf(from);

  async function sendAlertMail(input: MailAttemptInput): Promise<MailVerdict> {
    const mail = await beginMailAttempt(deps.pool, input.mailId);
    if (mail === null) return 'ended';
    if (transport === null) {
      await recordMailOutcome(deps.pool, mail.id, {
        status: 'failed',
        error: 'smtp_unconfigured: SMTP_URL is not set',
      });
      return 'failed';
    }
    try {
      const info = await transport.sendMail({
        from,
        to: mail.recipient,
        subject: mail.subject_line,
        text: mail.body_text,
        messageId: `<${mail.id}@${messageDomain}>`,
        headers: { 'X-Quota-Alert-Event': mail.alert_event_id },
      });
      await recordMailOutcome(deps.pool, mail.id, { status: 'sent', smtpResponse: info.response });
      return 'sent';
    } catch (caught) {
      const error = caught as NodemailerError;
      const final = error.permanent === true || input.retryInSeconds === null;
      await recordMailOutcome(deps.pool, mail.id, {
        status: final ? 'failed' : 'pending',
        error: `${error.code ?? 'error'}: ${error.message}`.slice(0, ERROR_CHARS_MAX),
      });
      return final ? 'failed' : 'retry';
    }
  }

  return { sendAlertMail };
}

export type AlertMailActivities = ReturnType<typeof createAlertMailActivities>;
