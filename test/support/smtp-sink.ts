import { eventually } from './services';

/** A message as the local stack's SMTP sink (MailDev, scripts/stack) keeps it. */
export interface SinkMessage {
  id: string;
  subject: string;
  text: string;
  from: { address: string; name: string }[];
  to: { address: string; name: string }[];
  /** Lower-cased header names. */
  headers: Record<string, string>;
}

const sinkUrl = () => {
  const url = process.env.SMTP_SINK_URL;
  if (!url) throw new Error('SMTP_SINK_URL is not set: run scripts/stack up');
  return url;
};

/** Every message the sink holds. */
export async function sinkMessages(): Promise<SinkMessage[]> {
  const response = await fetch(`${sinkUrl()}/api/email`);
  if (!response.ok) throw new Error(`the SMTP sink answered ${response.status}`);
  return (await response.json()) as SinkMessage[];
}

/** The messages sent to `address`, once there are `count` of them. */
export function mailsTo(address: string, count = 1, timeoutMs = 30_000): Promise<SinkMessage[]> {
  return eventually(async () => {
    const found = (await sinkMessages()).filter((m) => m.to.some((t) => t.address === address));
    return found.length >= count ? found : undefined;
  }, timeoutMs);
}
