import { X509Certificate, createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';
import { DATA_DIR } from './stack-env';

/**
 * The test CA and the receivers' certificate, made once and shared by every test run on this
 * machine: the worker process trusts the CA through WEBHOOK_CA_FILE, exactly as an operator
 * would configure it, and test/support/https-receiver.ts serves the certificate.
 */
export const WEBHOOK_TEST_DIR = path.join(DATA_DIR, 'webhook-test');

export const webhookTestFiles = (dir = WEBHOOK_TEST_DIR) => ({
  caFile: path.join(dir, 'ca.pem'),
  certFile: path.join(dir, 'server.pem'),
  keyFile: path.join(dir, 'server-key.pem'),
});

/** The loopback addresses the test receivers listen on, allowed although never public. */
export const WEBHOOK_TEST_EGRESS_ALLOW = '127.0.0.1/32,::1/128';

/** What a process that delivers to the test receivers needs in its environment. */
export const webhookTestEnv = () => ({
  WEBHOOK_CA_FILE: webhookTestFiles().caFile,
  WEBHOOK_EGRESS_ALLOW: WEBHOOK_TEST_EGRESS_ALLOW,
  // A receiver that hangs makes an attempt time out in 3 s, not the default 10 s.
  WEBHOOK_ATTEMPT_TIMEOUT_MS: '3000',
});

const CERTIFICATE_VALIDITY_DAYS = 365;
/** Renewed this long before it ends, so no test run starts on a certificate about to expire. */
const RENEW_BEFORE_END_DAYS = 30;
const DAY_MS = 86_400_000;

/**
 * Makes the CA and the receivers' key and certificate when they are absent, do not belong
 * together, or end within RENEW_BEFORE_END_DAYS. A new set is written into a directory of its
 * own and renamed into place, so a second jest run starting at the same moment reads a whole
 * set, never one run's CA beside the other's certificate.
 */
export async function ensureWebhookTestCertificates(): Promise<void> {
  if (usableSet(webhookTestFiles(WEBHOOK_TEST_DIR))) return;
  const staging = `${WEBHOOK_TEST_DIR}.${process.pid}.new`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  await writeCertificateSet(webhookTestFiles(staging));
  replaceDirectory(staging, WEBHOOK_TEST_DIR);
}

function usableSet(files: ReturnType<typeof webhookTestFiles>): boolean {
  try {
    const ca = new X509Certificate(fs.readFileSync(files.caFile));
    const server = new X509Certificate(fs.readFileSync(files.certFile));
    const key = createPrivateKey(fs.readFileSync(files.keyFile));
    const renewAt = Date.now() + RENEW_BEFORE_END_DAYS * DAY_MS;
    return (
      server.verify(ca.publicKey) &&
      server.checkPrivateKey(key) &&
      Date.parse(server.validTo) > renewAt &&
      Date.parse(ca.validTo) > renewAt
    );
  } catch {
    return false; // absent or unreadable
  }
}

async function writeCertificateSet(files: ReturnType<typeof webhookTestFiles>): Promise<void> {
  const notAfterDate = new Date(Date.now() + CERTIFICATE_VALIDITY_DAYS * DAY_MS);
  const ca = await generate([{ name: 'commonName', value: 'platform webhook test CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  const server = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate,
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  // The CA's key is not kept: nothing else is ever signed with it.
  fs.writeFileSync(files.caFile, ca.cert);
  fs.writeFileSync(files.certFile, server.cert);
  fs.writeFileSync(files.keyFile, server.private, { mode: 0o600 });
}

/**
 * Puts the new set in place of the old one, unless a run starting at the same moment already
 * put a usable set there (its worker may trust that CA by now): then that one stays.
 */
function replaceDirectory(staging: string, target: string): void {
  if (usableSet(webhookTestFiles(target))) {
    fs.rmSync(staging, { recursive: true, force: true });
    return;
  }
  const retired = `${target}.${process.pid}.old`;
  fs.rmSync(retired, { recursive: true, force: true });
  if (fs.existsSync(target)) fs.renameSync(target, retired);
  fs.renameSync(staging, target);
  fs.rmSync(retired, { recursive: true, force: true });
}
