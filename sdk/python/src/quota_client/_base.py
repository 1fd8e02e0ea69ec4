"""What the sync and async clients share: configuration, the request's making, the retry rule,
the error mapping and the parsing of answers. The clients only send and sleep."""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, Literal, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from ._exceptions import (
    APIConnectionError,
    APITimeoutError,
    QuotaError,
    error_class,
    parse_retry_after,
)
from ._routes import Route
from ._version import __version__

M = TypeVar("M", bound=BaseModel)

DEFAULT_BASE_URL: Final = "http://127.0.0.1:8081"
DEFAULT_TIMEOUT: Final = httpx.Timeout(30.0, connect=5.0)
API_KEY_ENV: Final = "QUOTA_API_KEY"
BASE_URL_ENV: Final = "QUOTA_BASE_URL"

# The statuses the service asks to be retried (the agent guide's retry rule): never another 4xx.
RETRY_STATUSES: Final = frozenset({429, 503})
# Probes whose 503 is their answer (a backend down, a job late): returned, not retried or raised.
PROBES: Final = frozenset({"healthz", "ping", "readyz", "jobsHealth", "workerHealth"})
# POSTs that may be sent twice with no second effect (besides those with an idempotency_key).
REPEATABLE_POSTS: Final = frozenset(
    {"check", "releaseReservation", "bootstrapTenantAuthz", "decodePayloads", "encodePayloads"}
)


class NotGiven:
    """The default of an argument left out: the field is not sent (None sends null)."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Final = NotGiven()


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before sending a request again.

    A 429 or 503 is retried after its Retry-After (seconds or an HTTP date), else after
    `initial_delay` doubling at each try up to `max_delay`, with +/- `jitter` of it at random; at
    most `max_retries` times (the default, 4, makes the agent guide's 5 tries in all). A broken
    connection is retried the same way when the request is safe to repeat: it never reached the
    service (connect errors), or repeating it has no second effect (GET, PUT, DELETE, a spending
    call with its idempotency_key, check, release, the payload codec). A Retry-After over
    `max_retry_after` is not waited for: the error is raised.
    """

    max_retries: int = 4
    initial_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.25
    max_retry_after: float = 60.0

    def backoff(self, retry: int) -> float:
        """The wait before retry number `retry` (0 for the first) without a Retry-After."""
        base = min(self.initial_delay * 2.0**retry, self.max_delay)
        spread = base * self.jitter * (2 * random.random() - 1)
        return max(0.0, min(base + spread, self.max_delay))

    def delay(self, retry: int, response: httpx.Response | None) -> float | None:
        """How long to wait before retry number `retry`; None: do not retry."""
        if retry >= self.max_retries:
            return None
        retry_after = parse_retry_after(response) if response is not None else None
        if retry_after is None:
            return self.backoff(retry)
        return retry_after if retry_after <= self.max_retry_after else None


def new_idempotency_key() -> str:
    """A fresh key for a spending call the caller gave none: every retry of the call reuses it."""
    return f"sdk_{uuid.uuid4().hex}"


def safe_to_repeat(route: Route) -> bool:
    return (
        route.method in ("GET", "PUT", "DELETE")
        or route.idempotency_key
        or route.operation_id in REPEATABLE_POSTS
    )


def body_of(model: type[BaseModel], fields: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of a request: `fields` less those not given, checked against the model of
    the document (pydantic.ValidationError before anything is sent), as the caller set them."""
    given = {name: value for name, value in fields.items() if value is not NOT_GIVEN}
    dumped: dict[str, Any] = model.model_validate(given).model_dump(
        mode="json", exclude_unset=True, by_alias=True
    )
    return dumped


def query_of(params: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters less those not given (None counts as not given)."""
    query: dict[str, str] = {}
    for name, value in params.items():
        if value is NOT_GIVEN or value is None:
            continue
        if isinstance(value, datetime):
            query[name] = value.isoformat()
        elif isinstance(value, bool):
            query[name] = "true" if value else "false"
        else:
            query[name] = str(value)
    return query


def items_of(items: Mapping[str, int] | Sequence[Any]) -> list[Any]:
    """Items as the document's list: the shorthand {resource: amount} made into its items."""
    if isinstance(items, Mapping):
        return [{"resource": resource, "amount": amount} for resource, amount in items.items()]
    return list(items)


def as_json(response: httpx.Response) -> Any:
    """An answer's JSON, decoded by the standard library (its integers are exact, however large:
    never a float on the way)."""
    return json.loads(response.content)


def as_model(response: httpx.Response, model: type[M]) -> M:
    return model.model_validate(as_json(response))


def as_models(response: httpx.Response, model: type[M]) -> list[M]:
    return [model.model_validate(item) for item in as_json(response)]


def error_from(response: httpx.Response) -> QuotaError:
    """The exception of a refusal: its class by status; `detail` the spec's detail."""
    try:
        body: Any = json.loads(response.content) if response.content else None
    except ValueError:
        body = None
    if isinstance(body, dict) and "detail" in body:
        detail = body["detail"]
    elif body is not None:
        detail = body  # a JSON answer of another shape (the MCP endpoint's JSON-RPC errors)
    else:
        detail = response.text or response.reason_phrase
    return error_class(response.status_code)(response.status_code, detail, response, body)


def connection_error(error: httpx.TransportError) -> APIConnectionError:
    request = error.request if _has_request(error) else None
    if isinstance(error, httpx.TimeoutException):
        return APITimeoutError(f"request timed out: {error}", request)
    return APIConnectionError(f"connection error: {error!r}", request)


def _has_request(error: httpx.TransportError) -> bool:
    try:
        error.request  # noqa: B018 - raises RuntimeError when the error has none
    except RuntimeError:
        return False
    return True


def never_sent(error: httpx.TransportError) -> bool:
    """The request cannot have reached the service: repeating it is always safe."""
    return isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


class BaseClient:
    """Configuration and request making, shared by `Client` and `AsyncClient`."""

    api_key: str | None
    base_url: httpx.URL
    retry: RetryPolicy

    def __init__(
        self,
        api_key: str | None,
        base_url: str | httpx.URL | None,
        max_retries: int | None,
        retry: RetryPolicy | None,
        default_headers: Mapping[str, str] | None,
    ) -> None:
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        url = base_url if base_url is not None else os.environ.get(BASE_URL_ENV, DEFAULT_BASE_URL)
        self.base_url = httpx.URL(str(url).rstrip("/") + "/")
        policy = retry if retry is not None else RetryPolicy()
        self.retry = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._default_headers = dict(default_headers or {})

    def _headers(self) -> dict[str, str]:
        headers = {
            "accept": "application/json",
            "user-agent": f"quota-client-python/{__version__}",
            **self._default_headers,
        }
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def _url(self, route: Route, path_params: Mapping[str, str]) -> httpx.URL:
        path = route.path
        for name, value in path_params.items():
            # Every character that is not unreserved is escaped: a subject may hold "/" or "?".
            path = path.replace("{" + name + "}", quote(str(value), safe=""))
        return self.base_url.join(path.lstrip("/"))

    def _request_args(
        self,
        route: Route,
        path_params: Mapping[str, str],
        query: Mapping[str, str] | None,
        body: Mapping[str, Any] | Sequence[Any] | None,
        timeout: float | httpx.Timeout | None | NotGiven,
    ) -> dict[str, Any]:
        """The arguments of httpx's build_request for one operation call."""
        headers = self._headers()
        content: bytes | None = None
        if body is not None:
            headers["content-type"] = "application/json"
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        return {
            "method": route.method,
            "url": self._url(route, path_params),
            "params": query or None,
            "headers": headers,
            "content": content,
            "timeout": httpx.USE_CLIENT_DEFAULT if isinstance(timeout, NotGiven) else timeout,
        }

    def _should_retry_status(self, route: Route, response: httpx.Response) -> bool:
        return response.status_code in RETRY_STATUSES and route.operation_id not in PROBES

    def _answered(self, route: Route, response: httpx.Response) -> bool:
        """Whether a response is the operation's answer (else a refusal to raise)."""
        if response.is_success:
            return True
        return response.status_code == 503 and route.operation_id in PROBES
