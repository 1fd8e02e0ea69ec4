/**
 * The workflow alert-mail/<mail_id>: one alert e-mail to one recipient, from its first attempt to
 * sent or failed. Each attempt is one activity (count it, send it over SMTP, record the reply);
 * between attempts it sleeps the webhooks' waits. The row is the truth: an attempt that finds the
 * mail sent or failed answers `ended`, and the workflow stops.
 *
 * An operator finds a tenant's mails by TenantId and Service="quota" (WorkflowType
 * alertMailWorkflow) and resets one like any execution: the attempt it re-runs sends again,
 * with the same Message-ID, so a mail client shows one message.
 *
 * Its end is upserted as DeliveryState (sent, failed, ended): failed mails are one query.
 *
 * PATCHES, by the steps of Temporal's patching sample (see workflows/runs/run.ts):
 * - delivery-state: step 2, patched(): the DeliveryState upsert at the end. Histories recorded
 *   before it (no marker) replay its old branch, no upsert. Next (deprecatePatch) once no open
 *   alertMailWorkflow started before this patch was deployed.
 * RECORDED HISTORIES: test/histories/quota/alert-mail-*.json (before delivery-state).
 */
import { patched, proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import { DELIVERY_STATE } from '../../contracts/shared/search-attributes';
import type { AlertMailActivities } from '../../activities/quota/alert-mail';
import type { AlertMailWorkflowInput, MailVerdict } from '../../contracts/quota/alert-mail';

/**
 * An attempt's SMTP exchange is bounded by the transport's own timeouts (about a minute); the
 * activity is retried only for the worker or Postgres failing, and sends again.
 */
const attempts = proxyActivities<AlertMailActivities>({
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute' },
});

export async function alertMailWorkflow(input: AlertMailWorkflowInput): Promise<MailVerdict> {
  for (let attempt = 1; ; attempt++) {
    const retryInSeconds = input.retryDelaysSeconds[attempt - 1] ?? null;
    const verdict = await attempts.sendAlertMail({ mailId: input.mailId, retryInSeconds });
    if (verdict !== 'retry') return ended(verdict);
    await sleep(retryInSeconds! * 1000);
  }
}

/** The mail's end, kept in DeliveryState (patch delivery-state). */
function ended(verdict: MailVerdict): MailVerdict {
  if (patched('delivery-state')) upsertSearchAttributes([{ key: DELIVERY_STATE, value: verdict }]);
  return verdict;
}
