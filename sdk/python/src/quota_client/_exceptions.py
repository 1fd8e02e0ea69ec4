"""The SDK's exceptions: one class per refusal status, each carrying the service's detail."""

from __future__ import annotations

import email.utils
import time
from typing import TYPE_CHECKING, Any

import httpx

from .models import ValidationError as ValidationErrorItem

if TYPE_CHECKING:
    from .models import ReserveResponse

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "InternalServerError",
    "MethodNotAllowedError",
    "NotFoundError",
    "PermissionDeniedError",
    "QuotaClientError",
    "QuotaError",
    "RateLimitError",
    "ReservationDenied",
    "ServiceUnavailableError",
    "ValidationError",
]


class QuotaClientError(Exception):
    """The root of everything this SDK raises (client-side argument checks aside: pydantic's)."""


class QuotaError(QuotaClientError):
    """The service refused a request: `status` is the HTTP status, `detail` the spec's detail.

    `detail` is the error code (``"not_found"``, ``"insufficient_scope"``, ...) for every status
    but 422, where it is the list of validation errors (see `ValidationError`). `code` is the code
    (None for a 422), `body` the parsed JSON body, `response` the httpx response.
    """

    status: int
    detail: Any
    response: httpx.Response
    body: Any

    def __init__(self, status: int, detail: Any, response: httpx.Response, body: Any = None):
        self.status = status
        self.detail = detail
        self.response = response
        self.body = body
        super().__init__(self._describe())

    @property
    def code(self) -> str | None:
        return self.detail if isinstance(self.detail, str) else None

    @property
    def retry_after(self) -> float | None:
        """The Retry-After header in seconds, when the service sent one."""
        return parse_retry_after(self.response)

    @property
    def request(self) -> httpx.Request:
        return self.response.request

    def _describe(self) -> str:
        request = self.response.request
        return f"{self.status} {self.detail!s} ({request.method} {request.url.path})"


class BadRequestError(QuotaError):
    """400."""


class AuthenticationError(QuotaError):
    """401 ``unauthorized``: no key, an unknown key, a wrong secret or a revoked key."""


class PermissionDeniedError(QuotaError):
    """403: ``insufficient_scope``, ``constraint_violation``, ``tenant_suspended``, ...

    For ``insufficient_scope`` the WWW-Authenticate header names the scope the route needs.
    """


class NotFoundError(QuotaError):
    """404: ``not_found``, ``plan_not_found``, ``reservation_not_found``, ..."""


class MethodNotAllowedError(QuotaError):
    """405 ``method_not_allowed``."""


class ConflictError(QuotaError):
    """409: ``name_taken``, ``in_use``, ``idempotency_key_reused``, ``reservation_expired``, ..."""


class ValidationError(QuotaError):
    """422: the request failed validation; `errors` lists each failure's loc, msg and type."""

    @property
    def errors(self) -> list[ValidationErrorItem]:
        if not isinstance(self.detail, list):
            return []
        return [ValidationErrorItem.model_validate(item) for item in self.detail]

    def _describe(self) -> str:
        request = self.response.request
        failures = "; ".join(
            f"{'.'.join(str(part) for part in item.get('loc', []))}: {item.get('msg')} "
            f"[{item.get('type')}]"
            for item in (self.detail if isinstance(self.detail, list) else [])
            if isinstance(item, dict)
        )
        return f"422 ({request.method} {request.url.path}): {failures or self.detail!s}"


class RateLimitError(QuotaError):
    """429: too many requests; retried by the client (Retry-After) before it is raised."""


class ServiceUnavailableError(QuotaError):
    """503: ``service_unavailable``, ``tenant_bootstrap_pending``, ``decision_contended``.

    Retried by the client (Retry-After, else backoff) before it is raised.
    """


class InternalServerError(QuotaError):
    """Any other 5xx."""


class APIConnectionError(QuotaClientError):
    """The service could not be reached, or the connection broke (after the retries allowed)."""

    def __init__(self, message: str, request: httpx.Request | None = None):
        super().__init__(message)
        self.request = request


class APITimeoutError(APIConnectionError):
    """The request timed out (after the retries allowed)."""


class ReservationDenied(QuotaClientError):
    """`client.reservation(...)` was denied: nothing is held. `response.results` says which
    policy refused and its ``retry_after_seconds``."""

    def __init__(self, response: ReserveResponse):
        self.response = response
        refused = [r.policy_name for r in response.results if not r.allowed]
        super().__init__(f"reservation denied by {', '.join(refused) or 'a policy'}")


STATUS_ERRORS: dict[int, type[QuotaError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    422: ValidationError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_class(status: int) -> type[QuotaError]:
    if status in STATUS_ERRORS:
        return STATUS_ERRORS[status]
    return InternalServerError if status >= 500 else QuotaError


def parse_retry_after(response: httpx.Response | None) -> float | None:
    """Retry-After in seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
