"""Python SDK of the quota management service.

    from quota_client import Client

    with Client(api_key="qk_...", base_url="http://127.0.0.1:8081") as quota:
        decision = quota.consume("user-1", {"tokens": 5})

`Client` blocks, `AsyncClient` awaits: the same methods, one per operation of the service's
OpenAPI document (named after its operationId in snake case). Models: `quota_client.models`.
"""

from . import models, types
from ._async_client import AsyncClient, AsyncReservation
from ._base import NOT_GIVEN, NotGiven, RetryPolicy
from ._exceptions import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    MethodNotAllowedError,
    NotFoundError,
    PermissionDeniedError,
    QuotaClientError,
    QuotaError,
    RateLimitError,
    ReservationDenied,
    ServiceUnavailableError,
    ValidationError,
)
from ._routes import ROUTES, Route
from ._sync_client import Client, Reservation
from ._version import __version__

__all__ = [
    "NOT_GIVEN",
    "ROUTES",
    "APIConnectionError",
    "APITimeoutError",
    "AsyncClient",
    "AsyncReservation",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConflictError",
    "InternalServerError",
    "MethodNotAllowedError",
    "NotFoundError",
    "NotGiven",
    "PermissionDeniedError",
    "QuotaClientError",
    "QuotaError",
    "RateLimitError",
    "Reservation",
    "ReservationDenied",
    "RetryPolicy",
    "Route",
    "ServiceUnavailableError",
    "ValidationError",
    "__version__",
    "models",
    "types",
]
