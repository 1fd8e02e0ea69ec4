import type { AlertEventRow } from '../../../db/quota/alert-events';
import { alertMail } from '../../../services/quota/alerts/mail';

const event: AlertEventRow = {
  id: 'ale_1',
  rule_id: 'alr_1',
  subject: 'acme:42',
  policy_id: 'pol_1',
  window_id: '2026-11-26',
  threshold_pct: 80,
  usage_pct: '81.25',
  suppressed: false,
  triggered_at: '2026-11-26T10:00:00.000Z',
};

describe('alert mails', () => {
  it('says what crossed in the subject line and every field of the event in the text', () => {
    const mail = alertMail(event, 'Nearly out');
    expect(mail.subjectLine).toBe('Quota alert "Nearly out": acme:42 at 81.25% of pol_1');
    for (const line of [
      'rule:          Nearly out (alr_1)',
      'window:        2026-11-26',
      'threshold_pct: 80',
      'usage_pct:     81.25',
      'triggered_at:  2026-11-26T10:00:00.000Z',
      'alert event:   ale_1',
    ])
      expect(mail.bodyText).toContain(line);
  });

  it('keeps the subject line on one line and within 200 characters', () => {
    const mail = alertMail(event, `a\r\nBcc: someone@example.com\t${'x'.repeat(300)}`);
    expect(mail.subjectLine).not.toMatch(/[\r\n\t]/);
    expect(mail.subjectLine).toHaveLength(200);
    expect(mail.subjectLine.endsWith('…')).toBe(true);
  });
});
