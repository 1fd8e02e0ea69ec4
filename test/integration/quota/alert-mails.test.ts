/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { createAlertMailActivities } from '../../../activities/quota/alert-mail';
import { flushLedgerStream } from '../../../services/quota/consumption/ledger-flush';
import { ulid } from '../../../db/ids';
import { insertAlertMails, mailsOfEvent } from '../../../db/quota/alert-mails';
import { sql } from '../../../db/pool';
import { eventually } from '../../support/services';
import { mailsTo, sinkMessages } from '../../support/smtp-sink';
import { config, startQuota, subjectOnPlan, type QuotaClient, type QuotaHarness } from './support';

/**
 * Alert e-mails: an unsuppressed alert event is mailed to each address of its rule through a
 * real SMTP server (the stack's sink, read back over its API) by alert-mail/<id> on the test
 * worker; an SMTP server that refuses or cannot be reached is met by the attempt activity.
 */
describe('quota: alert mails', () => {
  let h: QuotaHarness;
  let admin: QuotaClient;
  let tenantId: string;
  beforeAll(async () => {
    h = await startQuota();
    ({ admin, id: tenantId } = await h.newTenant());
  });
  afterAll(async () => {
    await h?.close();
  });

  /** A subject on a plan of one daily quota of 10, in this mode. */
  async function watched(mode: 'strict' | 'fast') {
    const n = `${mode}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
    const { resource, policies, subject } = await subjectOnPlan(admin, `mail-${n}`, {
      limits: { day: 10 },
      mode,
    });
    const policy = policies.day;
    const consume = async (amount: number) => {
      const reply = await admin.post('/v1/consume', {
        subject,
        items: [{ resource: resource.name, amount }],
      });
      expect(reply.body.allowed).toBe(true);
      await flushLedgerStream(h);
    };
    const events = async () =>
      (await admin.get(`/v1/alert-events?subject=${encodeURIComponent(subject)}`)).body;
    return { n, policy, subject, consume, events };
  }

  it.each(['strict', 'fast'] as const)(
    'mails an alert (%s) to each address of the rule, once per event, with the event in its headers and text',
    async (mode) => {
      const w = await watched(mode);
      const to = [`ops-${w.n}@example.test`, `billing-${w.n}@example.test`];
      const rule = (
        await admin.post('/v1/alert-rules', {
          name: `Half of ${w.n}`,
          threshold_pct: 50,
          policy_id: w.policy.id,
          cooldown_seconds: 3_600,
          channels: { emails: to },
        })
      ).body;
      await w.consume(6);
      const [event] = await w.events();
      expect(event).toMatchObject({ rule_id: rule.id, usage_pct: 60, suppressed: false });

      for (const address of to) {
        const [mail] = await mailsTo(address);
        expect(mail!.subject).toBe(
          `Quota alert "Half of ${w.n}": ${w.subject} at 60.00% of ${w.policy.id}`,
        );
        expect(mail!.from).toEqual([{ address: 'alerts@quota.localhost', name: 'Quota alerts' }]);
        expect(mail!.headers['x-quota-alert-event']).toBe(event.id);
        expect(mail!.headers['message-id']).toMatch(/^<alm_[0-9A-Z]{26}@quota\.localhost>$/);
        expect(mail!.text).toContain(`alert event:   ${event.id}`);
        expect(mail!.text).toContain(`threshold_pct: 50`);
      }
      const rows = await eventually(async () => {
        const mails = await mailsOfEvent(h.pool, event.id);
        return mails.every((m) => m.status === 'sent') ? mails : undefined;
      });
      expect(rows.map((m) => [m.recipient, m.attempt_count])).toEqual(
        [...to].sort().map((address) => [address, 1]),
      );
      expect(rows[0]!.smtp_response).toMatch(/^250 /);

      // The window crossing the rule again makes no new event, and no new mail.
      await w.consume(2);
      expect(await w.events()).toHaveLength(1);
      expect(await mailsTo(to[0]!)).toHaveLength(1);
    },
  );

  it('records a suppressed event without mailing it', async () => {
    const w = await watched('strict');
    const address = `quiet-${w.n}@example.test`;
    await admin.post('/v1/alert-rules', {
      name: 'any',
      threshold_pct: 10,
      cooldown_seconds: 3_600,
      subject_filter: w.subject,
      channels: { emails: [address] },
    });
    // One consume crosses the subject's day window; a month policy added later would be
    // within the cooldown: here the second event comes from a second policy on the plan.
    await w.consume(2);
    await mailsTo(address, 1);
    const second = (
      await admin.post('/v1/policies', {
        name: `mail-${w.n}-month`,
        resource_id: w.policy.resource_id,
        kind: 'quota',
        limit_amount: 10,
        window_kind: 'fixed',
        window_unit: 'month',
      })
    ).body;
    const plan = (await admin.post('/v1/plans', { name: `mail-${w.n}-2`, policy_ids: [second.id] }))
      .body;
    await admin.put(`/v1/subjects/${w.subject}/assignment`, { plan_id: plan.id });
    await w.consume(2);
    const events = await w.events();
    expect(events.map((e: { suppressed: boolean }) => e.suppressed)).toEqual([true, false]);
    expect(await mailsOfEvent(h.pool, events[0].id)).toEqual([]);
    expect((await sinkMessages()).filter((m) => m.to[0]?.address === address)).toHaveLength(1);
  });

  describe('the attempt activity', () => {
    let refusing: SMTPServer;
    let refusingUrl: string;
    beforeAll(async () => {
      // A real SMTP server that refuses every recipient for good (550).
      refusing = new SMTPServer({
        authOptional: true,
        disabledCommands: ['STARTTLS'],
        onRcptTo: (_address, _session, callback) =>
          callback(Object.assign(new Error('no such mailbox'), { responseCode: 550 })),
      });
      await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
      refusingUrl = `smtp://127.0.0.1:${(refusing.server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => refusing.close(() => resolve())));

    /** A pending mail of a real event, on a queue no worker polls: only the test attempts it. */
    async function pendingMail(): Promise<string> {
      const w = await watched('strict');
      await admin.post('/v1/alert-rules', {
        name: 'r',
        threshold_pct: 50,
        policy_id: w.policy.id,
        channels: {},
      });
      await w.consume(5);
      const [event] = await w.events();
      const id = `alm_${ulid()}`;
      await insertAlertMails(h.pool, [
        {
          id,
          tenantId,
          alertEventId: event.id,
          recipient: `nobody-${w.n}@example.test`,
          subjectLine: 'a test',
          bodyText: 'a test',
          // Under the run's prefix: were a workflow started on it, the run's teardown ends it.
          workflowTaskQueue: `${process.env.TASK_QUEUE_PREFIX ?? ''}no-worker-polls-this`,
        },
      ]);
      return id;
    }
    const activityWith = (smtpUrl: string | null) =>
      createAlertMailActivities({
        pool: h.pool,
        config: { ...config, mail: { ...config.mail, smtpUrl } },
      });
    const rowOf = async (id: string) =>
      h.pool.one(sql.unsafe`SELECT status, attempt_count, last_error FROM quota.alert_mails
                            WHERE id = ${id}`);

    it('fails a mail the server refuses (5xx) at once, whatever attempts are left', async () => {
      const id = await pendingMail();
      expect(
        await activityWith(refusingUrl).sendAlertMail({ mailId: id, retryInSeconds: 60 }),
      ).toBe('failed');
      expect(await rowOf(id)).toMatchObject({ status: 'failed', attempt_count: 1 });
      expect(String((await rowOf(id)).last_error)).toContain('no such mailbox');
      // A repeated attempt (a reset, a retried activity) finds it ended and sends nothing.
      expect(
        await activityWith(refusingUrl).sendAlertMail({ mailId: id, retryInSeconds: 60 }),
      ).toBe('ended');
    });

    it('retries a server out of reach while attempts are left, then fails it', async () => {
      const id = await pendingMail();
      const closed = activityWith('smtp://127.0.0.1:9'); // discard: nothing listens
      expect(await closed.sendAlertMail({ mailId: id, retryInSeconds: 1 })).toBe('retry');
      expect(await rowOf(id)).toMatchObject({ status: 'pending', attempt_count: 1 });
      expect(await closed.sendAlertMail({ mailId: id, retryInSeconds: null })).toBe('failed');
      expect(await rowOf(id)).toMatchObject({ status: 'failed', attempt_count: 2 });
      expect(String((await rowOf(id)).last_error)).toMatch(/^ECONNECTION|^ESOCKET/);
    });

    it('fails a mail at once when no SMTP server is configured', async () => {
      const id = await pendingMail();
      expect(await activityWith(null).sendAlertMail({ mailId: id, retryInSeconds: 60 })).toBe(
        'failed',
      );
      expect(await rowOf(id)).toMatchObject({
        status: 'failed',
        last_error: 'smtp_unconfigured: SMTP_URL is not set',
      });
    });
  });
});
