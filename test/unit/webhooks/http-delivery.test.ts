import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createWebhookSender, outcomeOfStatus } from '../../../platform/webhooks/http-delivery';

describe('outcomeOfStatus', () => {
  it.each([200, 201, 204, 299])('%i is delivered', (status) => {
    expect(outcomeOfStatus(status)).toEqual({ verdict: 'delivered', status });
  });

  it.each([300, 301, 302, 307, 308, 399])('%i is a failed attempt, not followed', (status) => {
    expect(outcomeOfStatus(status)).toEqual({
      verdict: 'retry',
      status,
      error: `redirect:${status}`,
    });
  });

  it.each([408, 429, 500, 502, 503, 599])('%i is retried', (status) => {
    expect(outcomeOfStatus(status)).toEqual({ verdict: 'retry', status, error: `http:${status}` });
  });

  it.each([400, 401, 403, 404, 407, 409, 410, 413, 422, 428, 430, 499])(
    '%i is dead at once',
    (status) => {
      expect(outcomeOfStatus(status)).toEqual({ verdict: 'dead', status, error: `http:${status}` });
    },
  );

  it.each([101, 199])('an informational %i as the final answer is retried', (status) => {
    expect(outcomeOfStatus(status)).toMatchObject({ verdict: 'retry', status });
  });
});

describe('createWebhookSender', () => {
  const options = { egressAllow: [], caFile: null, timeoutMs: 1_000 };

  it('throws at construction for an invalid allow CIDR, naming it', () => {
    expect(() => createWebhookSender({ ...options, egressAllow: ['10.0.0.0/33'] })).toThrow(
      "WEBHOOK_EGRESS_ALLOW: '10.0.0.0/33' is not a CIDR",
    );
  });

  it('throws at construction for a CA file it cannot read', () => {
    const caFile = path.join(os.tmpdir(), `absent-${process.pid}.pem`);
    expect(() => createWebhookSender({ ...options, caFile })).toThrow(
      `WEBHOOK_CA_FILE: cannot read ${caFile}`,
    );
  });

  it('throws at construction for a CA file without a certificate', () => {
    const caFile = path.join(os.tmpdir(), `not-a-ca-${process.pid}.pem`);
    fs.writeFileSync(caFile, 'not a certificate\n');
    try {
      expect(() => createWebhookSender({ ...options, caFile })).toThrow(
        `WEBHOOK_CA_FILE: ${caFile} holds no PEM certificate`,
      );
    } finally {
      fs.rmSync(caFile);
    }
  });

  it.each([
    'http://example.com/hook',
    'ftp://example.com/hook',
    'example.com/hook',
    'https://user:secret@example.com/hook',
    'https://:secret@example.com/hook',
    '',
  ])('sends nothing to %j: dead, invalid_url', async (url) => {
    const outcome = await createWebhookSender(options).send({ url, headers: {}, body: '{}' });

    expect(outcome).toMatchObject({ verdict: 'dead', status: null, error: 'invalid_url' });
  });

  it.each([
    ['https://127.0.0.1/hook', '127.0.0.1'],
    ['https://2130706433/hook', '127.0.0.1'],
    ['https://0x7f.1/hook', '127.0.0.1'],
    ['https://[::1]/hook', '::1'],
    ['https://[fd00::2]:8443/hook', 'fd00::2'],
    ['https://169.254.169.254/latest/meta-data', '169.254.169.254'],
  ])('refuses the IP literal in %s before connecting', async (url, address) => {
    const outcome = await createWebhookSender(options).send({ url, headers: {}, body: '{}' });

    expect(outcome).toMatchObject({
      verdict: 'dead',
      status: null,
      error: `egress_refused:${address}`,
    });
  });
});
