/**
 * What the quota API and the alert mail workflow share (workflows/quota/alert-mail.ts): its id,
 * input and an attempt's verdict. Pure, so the sandboxed bundle and the API both import it.
 */
export const alertMailWorkflowId = (mailId: string): string => `alert-mail/${mailId}`;

export interface AlertMailWorkflowInput {
  mailId: string;
  /** Waits before attempts 2, 3, ...: at most one attempt more than there are waits. */
  retryDelaysSeconds: number[];
}

export type MailVerdict =
  /** The SMTP server accepted the message. */
  | 'sent'
  /** A transient failure (a 4xx reply, a connection or timeout failure): another attempt. */
  | 'retry'
  /** Refused for good (a 5xx reply, no SMTP server configured) or no attempt left. */
  | 'failed'
  /** Nothing to attempt: the mail was sent or has failed already. */
  | 'ended';
