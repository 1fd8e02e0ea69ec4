import { pythonSignature } from '../../support/python-signature';
import { generateWebhookSecret, svcSignature } from '../../../platform/webhooks/signing';

const TIMESTAMP = 1_764_000_000;
const BODY = JSON.stringify({
  event_type: 'run.completed',
  note: 'naïve café — 東京 🚀 "quoted" \\ back',
  line: 'a\nb',
});

describe('svcSignature', () => {
  it('for a generated secret, then the key is its 32 hex-decoded bytes', () => {
    const secret = generateWebhookSecret();

    expect(svcSignature(secret, 'generated', TIMESTAMP, BODY)).toBe(
      pythonSignature(secret, 'generated', TIMESTAMP, BODY),
    );
  });

  it('for a supplied secret, then the key is the secret verbatim', () => {
    const secret = 'whsec_supplied-ünïcödé-Secret/+=';

    expect(svcSignature(secret, 'supplied', TIMESTAMP, BODY)).toBe(
      pythonSignature(secret, 'supplied', TIMESTAMP, BODY),
    );
  });

  it('for a secret of unknown origin, then the key is the secret verbatim', () => {
    const secret = 'legacy-secret';

    expect(svcSignature(secret, 'unknown', TIMESTAMP, BODY)).toBe(
      pythonSignature(secret, 'supplied', TIMESTAMP, BODY),
    );
  });

  it('the same hex string signs differently as a generated and as a supplied secret', () => {
    const secret = generateWebhookSecret();

    expect(svcSignature(secret, 'generated', TIMESTAMP, BODY)).not.toBe(
      svcSignature(secret, 'supplied', TIMESTAMP, BODY),
    );
  });

  it('a different timestamp or a changed byte of the body changes the signature', () => {
    const secret = generateWebhookSecret();
    const signed = svcSignature(secret, 'generated', TIMESTAMP, BODY);

    expect(svcSignature(secret, 'generated', TIMESTAMP + 1, BODY)).not.toBe(signed);
    expect(svcSignature(secret, 'generated', TIMESTAMP, BODY.replace('é', 'e'))).not.toBe(signed);
  });
});

describe('generateWebhookSecret', () => {
  it('is 64 lowercase hex characters (32 bytes), new each time', () => {
    const secrets = new Set(Array.from({ length: 50 }, generateWebhookSecret));

    expect(secrets.size).toBe(50);
    for (const secret of secrets) expect(secret).toMatch(/^[0-9a-f]{64}$/);
  });
});
