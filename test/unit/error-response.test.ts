import { errorResponse } from '../../api/http/error-response';
import { DomainError, MethodNotAllowedError, platformError } from '../../platform/errors';
import { RUNS_ERRORS, runsError } from '../../services/runs/errors';

/** The one place a domain error becomes HTTP: the catalogue's status and the headers it implies. */
describe('errorResponse', () => {
  it('takes the status from the catalogue, and the message from it when the thrower gives none', () => {
    const error = runsError('not_terminal');
    expect(error.message).toBe('not_terminal');
    expect(errorResponse(error, RUNS_ERRORS)).toEqual({ status: 409, headers: {} });
  });

  it('sends Retry-After for a retryAfterSeconds, Allow for a method not allowed, the bearer challenge with a 401', () => {
    expect(errorResponse(runsError('rate_limited', { retryAfterSeconds: 7 }), RUNS_ERRORS)).toEqual(
      { status: 429, headers: { 'Retry-After': '7' } },
    );
    expect(errorResponse(new MethodNotAllowedError('GET, HEAD', 'no'), RUNS_ERRORS)).toEqual({
      status: 405,
      headers: { Allow: 'GET, HEAD' },
    });
    expect(errorResponse(runsError('unauthorized'), RUNS_ERRORS)).toEqual({
      status: 401,
      headers: { 'WWW-Authenticate': 'Bearer' },
    });
  });

  it('answers 500 for a code its service does not catalogue (a programmer error, never a guess)', () => {
    expect(errorResponse(new DomainError('no_such_code'), RUNS_ERRORS).status).toBe(500);
  });

  it('gives every platform code a status in every service', () => {
    expect(errorResponse(platformError('SERVICE_UNAVAILABLE'), RUNS_ERRORS).status).toBe(503);
  });
});
