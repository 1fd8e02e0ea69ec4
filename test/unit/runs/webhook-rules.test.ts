import { DomainError } from '../../../platform/errors';
import { SUBSCRIBABLE } from '../../../services/runs/webhooks/catalogue';
import { changesOf, testEnvelope } from '../../../services/runs/webhooks/endpoints';
import {
  InlineWebhook,
  assertSubscription,
  inlineWebhookRow,
} from '../../../services/runs/webhooks/inline';
import { WEBHOOK_URL_PATTERN, isWebhookUrl } from '../../../platform/webhooks/url';
import { TESTABLE_EVENTS, TestRequest } from '../../../api/runs/routes/webhooks';

const codeOf = (fn: () => void): string | null => {
  try {
    fn();
    return null;
  } catch (error) {
    return error instanceof DomainError ? String(error.code) : String(error);
  }
};

describe('webhook url rule', () => {
  it.each([
    'https://receiver.example/hook',
    'HTTPS://Receiver.Example',
    'https://receiver.example:8443/a?b=c#d',
    'https://[::1]/hook',
    'https://127.0.0.1/hook',
    'https://receiver.example/path@not-userinfo',
    'https://xn--nxasmq6b.example/',
  ])('when the url is %s, then it is accepted', (url) => {
    expect(isWebhookUrl(url)).toBe(true);
    expect(new RegExp(WEBHOOK_URL_PATTERN, 'u').test(url)).toBe(true);
  });

  it.each([
    'http://receiver.example/hook',
    'https://user@receiver.example/',
    'https://user:pw@receiver.example/',
    'https://:pw@receiver.example/',
    '/relative',
    'receiver.example/hook',
    '//receiver.example/hook',
    'https:/receiver.example',
    'https:///hook',
    'https://receiver.example:65536/',
    'https://receiver example/',
    ' https://receiver.example/',
    'https://receiver.example/\n',
    'https://evil.example\\@receiver.example/',
    'wss://receiver.example/',
    '',
  ])('when the url is %j, then it is refused', (url) => {
    expect(isWebhookUrl(url)).toBe(false);
  });

  it('when a url matches the documented pattern but does not parse, then it is refused (the 400 past the schema)', () => {
    const url = 'https://receiver.example:99999/';
    expect(new RegExp(WEBHOOK_URL_PATTERN, 'u').test(url)).toBe(true);
    expect(isWebhookUrl(url)).toBe(false);
  });
});

describe('subscription checks', () => {
  it('when url and events are both wrong, then the url is refused first', () => {
    expect(codeOf(() => assertSubscription({ url: 'http://x', events: ['nope'] }))).toBe(
      'invalid_webhook_url',
    );
  });

  it('when any entry is unknown, then unknown_event_type; every catalogue entry passes', () => {
    expect(codeOf(() => assertSubscription({ events: [...SUBSCRIBABLE] }))).toBeNull();
    expect(codeOf(() => assertSubscription({ events: ['run.*', 'run.'] }))).toBe(
      'unknown_event_type',
    );
    expect(codeOf(() => assertSubscription({ events: ['webhook.test'] }))).toBe(
      'unknown_event_type',
    );
  });

  it('when a PATCH names neither url nor events, then there is nothing to check', () => {
    expect(codeOf(() => assertSubscription({}))).toBeNull();
  });
});

describe('inline webhook', () => {
  it('when it has no secret, then its row has a null secret (stored as origin none); with one, kept', () => {
    const unsigned = inlineWebhookRow({ url: 'https://r.example/', events: ['*'] })!;
    expect(unsigned).toMatchObject({ url: 'https://r.example/', events: ['*'], secret: null });
    expect(unsigned.endpointId).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(
      inlineWebhookRow({ url: 'https://r.example/', events: ['*'], secret: 's' })!.secret,
    ).toBe('s');
    expect(inlineWebhookRow(undefined)).toBeNull();
  });

  it('when it has an unknown key, then its schema refuses it', () => {
    const { error } = InlineWebhook.validate({ url: 'https://r.example/', events: ['*'], x: 1 });
    expect(error?.details[0]?.type).toBe('object.unknown');
  });
});

describe('test deliveries', () => {
  it('when a test is sent, then its envelope has test true, data {} and no delivery block', () => {
    const at = new Date('2030-01-02T03:04:05.678Z');
    expect(
      testEnvelope({ eventId: 'E', eventType: 'webhook.test', tenantId: 't', endpointId: 'X', at }),
    ).toEqual({
      event_id: 'E',
      event_type: 'webhook.test',
      occurred_at: '2030-01-02T03:04:05.678Z',
      tenant_id: 't',
      resource: { type: 'webhook', id: 'X' },
      data: {},
      test: true,
      truncated: false,
    });
  });

  it('when the body is empty, then the type is webhook.test; an alias or a wildcard is no concrete type', () => {
    expect(TestRequest.validate({}).value).toEqual({
      event_type: 'webhook.test',
    });
    expect(TESTABLE_EVENTS).toContain('run.exited');
    expect(TESTABLE_EVENTS).toContain('tenant.delivery_dead');
    for (const entry of ['run.terminal', 'run.*', '*'])
      expect(TestRequest.validate({ event_type: entry }).error).toBeDefined();
  });
});

describe('PATCH changes', () => {
  it('when a secret is patched, then it is supplied; absent fields stay absent', () => {
    expect(changesOf({ secret: 'x', active: true })).toEqual({
      url: undefined,
      events: undefined,
      description: undefined,
      active: true,
      secret: { value: 'x', origin: 'supplied' },
    });
  });
});
