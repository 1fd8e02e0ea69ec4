"""The synchronous client: generated from _async_client.py by tools/generate.py (async
and await taken out). Do not edit: edit _async_client.py and regenerate."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal

import httpx

from . import _routes
from ._base import (
    DEFAULT_TIMEOUT,
    NOT_GIVEN,
    BaseClient,
    NotGiven,
    RetryPolicy,
    as_json,
    as_model,
    as_models,
    body_of,
    connection_error,
    error_from,
    items_of,
    never_sent,
    new_idempotency_key,
    query_of,
    safe_to_repeat,
)
from ._exceptions import ReservationDenied
from ._routes import Route
from .models import (
    AlertEventOut,
    AlertRuleCreate,
    AlertRuleOut,
    AlertRulePatch,
    ApiKeyCreate,
    ApiKeyMinted,
    ApiKeyOut,
    ApiKeyPatch,
    AssignmentOut,
    AssignmentPut,
    AuditEntry,
    AuditPage,
    CheckRequest,
    CheckResponse,
    CodecPayload,
    CodecPayloads,
    CommitRequest,
    CommitResponse,
    ConsumeRequest,
    ConsumeResponse,
    DeliveryOut,
    EntitlementsOut,
    JobList,
    JobReport,
    JobsHealth,
    LedgerEntry,
    LedgerPage,
    OverrideOut,
    OverridesPut,
    PlanCreate,
    PlanOut,
    PlanPatch,
    PlanPoliciesPut,
    PolicyCreate,
    PolicyOut,
    PolicyPatch,
    RefundRequest,
    RefundResponse,
    ReleaseRequest,
    ReleaseResponse,
    ReservationOut,
    ReserveRequest,
    ReserveResponse,
    ResourceCreate,
    ResourceOut,
    ResourcePatch,
    SubjectUsageOut,
    SummaryRow,
    TenantCreate,
    TenantCreated,
    TenantOut,
    TenantPatch,
    WebhookEndpointCreate,
    WebhookEndpointCreated,
    WebhookEndpointOut,
    WebhookEndpointPatch,
    WebhookTestResult,
    WorkerHealth,
)
from .types import (
    ActualsParam,
    ChannelsParam,
    ConstraintsParam,
    ItemsParam,
    OverridesParam,
    PayloadsParam,
    Scope,
)

__all__ = ["Client", "Reservation"]

Timeout = float | httpx.Timeout | None


class Client(BaseClient):
    """A client of the quota service (`Client` and `Client` have the same methods).

    `api_key` defaults to $QUOTA_API_KEY (a tenant key, or an operator key for the /v1/tenants and
    /v1/ops routes; the probes need none), `base_url` to $QUOTA_BASE_URL, else
    http://127.0.0.1:8081. 429 and 503 are retried (see `RetryPolicy`; `max_retries` sets its
    count); every other refusal raises its `QuotaError` subclass. Spending calls (consume, refund,
    reserve, commit) send an idempotency_key, one of their own when the caller gives none, that
    every retry of the call reuses: a retried call is decided once.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | httpx.URL | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(api_key, base_url, max_retries, retry, default_headers)
        self.timeout = timeout
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)

    def with_options(
        self,
        *,
        api_key: str | None | NotGiven = NOT_GIVEN,
        timeout: Timeout | NotGiven = NOT_GIVEN,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> Client:
        """A client like this one with some options changed, sharing its connections."""
        client = Client(
            self.api_key if isinstance(api_key, NotGiven) else api_key,
            base_url=self.base_url,
            timeout=self.timeout if isinstance(timeout, NotGiven) else timeout,
            max_retries=max_retries,
            retry=retry if retry is not None else self.retry,
            default_headers=self._default_headers,
            http_client=self._http,
        )
        return client

    def close(self) -> None:
        """Closes the connections (those of an `http_client` given by the caller are its own)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _send(
        self,
        route: Route,
        *,
        path: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | Sequence[Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """Sends one operation call, retried by the retry policy; answers its response or raises
        the refusal's `QuotaError` (or `APIConnectionError`)."""
        args = self._request_args(route, path or {}, query, body, NOT_GIVEN)
        args["headers"].update(headers or {})
        retry = 0
        while True:
            request = self._http.build_request(**args)
            try:
                response = self._http.send(request)
            except httpx.TransportError as error:
                repeatable = never_sent(error) or safe_to_repeat(route)
                delay = self.retry.delay(retry, None) if repeatable else None
                if delay is None:
                    raise connection_error(error) from error
            else:
                if self._answered(route, response):
                    return response
                delay = (
                    self.retry.delay(retry, response)
                    if self._should_retry_status(route, response)
                    else None
                )
                if delay is None:
                    raise error_from(response)
            retry += 1
            time.sleep(delay)

    # -- operations: probes ---------------------------------------------------------------------

    def healthz(self) -> dict[str, str]:
        """Liveness: never touches a backend."""
        return dict(as_json(self._send(_routes.HEALTHZ)))

    def ping(self) -> dict[str, str]:
        """Liveness, as /healthz."""
        return dict(as_json(self._send(_routes.PING)))

    def readyz(self) -> dict[str, str]:
        """Readiness. A 503 is answered, not raised: a backend down is named under ``down``."""
        return dict(as_json(self._send(_routes.READYZ)))

    def worker_health(self) -> WorkerHealth:
        """Fast mode's ledger pipeline (a 503 is answered: ``status`` is then ``lagging``)."""
        return as_model(self._send(_routes.WORKER_HEALTH), WorkerHealth)

    def jobs_health(self) -> JobsHealth:
        """Background jobs' freshness (a 503 is answered: ``healthy`` is then false)."""
        return as_model(self._send(_routes.JOBS_HEALTH), JobsHealth)

    def metrics(self) -> str:
        """Prometheus metrics, as text (loopback and private networks only)."""
        return (self._send(_routes.METRICS)).text

    def open_api_document(self) -> dict[str, Any]:
        """The service's OpenAPI document."""
        document: dict[str, Any] = as_json(self._send(_routes.OPEN_API_DOCUMENT))
        return document

    def agent_guide(self) -> str:
        """/llms.txt: a concise guide for agents (auth, scopes, idempotency, retries, codes)."""
        return (self._send(_routes.AGENT_GUIDE)).text

    # -- agents ---------------------------------------------------------------------------------

    def mcp(self, message: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Any:
        """Sends one JSON-RPC message (or a batch) to the MCP endpoint (stateless streamable
        HTTP) and answers the JSON-RPC response (a list for a batch; None when the service
        accepted notifications only). Tools act with this client's key."""
        body: Any = dict(message) if isinstance(message, Mapping) else [dict(m) for m in message]
        accept = {"accept": "application/json, text/event-stream"}
        response = self._send(_routes.MCP, body=body, headers=accept)
        return as_json(response) if response.content else None

    # -- operations: background jobs (operator key) -------------------------------------------

    def list_jobs(self, *, limit: int | NotGiven = NOT_GIVEN) -> JobList:
        """The background jobs and their latest runs (operator)."""
        query = query_of({"limit": limit})
        return as_model(self._send(_routes.LIST_JOBS, query=query), JobList)

    def run_job(self, job_name: str) -> JobReport:
        """Runs a background job now (operator): ledger-flush, reservation-expiry, ..."""
        path = {"job_name": job_name}
        return as_model(self._send(_routes.RUN_JOB, path=path), JobReport)

    # -- operations: Temporal payload codec (operator key) ------------------------------------

    def decode_payloads(self, payloads: PayloadsParam) -> list[CodecPayload]:
        """Decrypts Temporal payloads, as the Web UI's codec does (operator; clear ones as is)."""
        body = body_of(CodecPayloads, {"payloads": list(payloads)})
        response = self._send(_routes.DECODE_PAYLOADS, body=body)
        return as_model(response, CodecPayloads).payloads

    def encode_payloads(self, payloads: PayloadsParam) -> list[CodecPayload]:
        """Encrypts Temporal payloads under the active key, as a worker would (operator)."""
        body = body_of(CodecPayloads, {"payloads": list(payloads)})
        response = self._send(_routes.ENCODE_PAYLOADS, body=body)
        return as_model(response, CodecPayloads).payloads

    def open_codec_session(self) -> None:
        """Sets this key as a browser's codec session cookie, for the Web UI (operator)."""
        self._send(_routes.OPEN_CODEC_SESSION)

    def close_codec_session(self) -> None:
        """Ends a browser's codec session: clears its cookie (no key needed)."""
        self._send(_routes.CLOSE_CODEC_SESSION)

    def codec_login_page(self) -> str:
        """The HTML page where an operator opens a codec session in a browser, as text."""
        return (self._send(_routes.CODEC_LOGIN_PAGE)).text

    # -- tenants (operator key) ---------------------------------------------------------------

    def list_tenants(self) -> list[TenantOut]:
        """Every tenant, oldest first (operator)."""
        return as_models(self._send(_routes.LIST_TENANTS), TenantOut)

    def create_tenant(self, *, name: str, admin_actor: str | NotGiven = NOT_GIVEN) -> TenantCreated:
        """Creates a tenant and its first key, every tenant scope, its secret in `admin_key.key`
        only here (operator). Until the tenant's grants are written that key is answered 503
        ``tenant_bootstrap_pending``, which the client retries."""
        body = body_of(TenantCreate, {"name": name, "admin_actor": admin_actor})
        return as_model(self._send(_routes.CREATE_TENANT, body=body), TenantCreated)

    def get_tenant(self, tenant_id: str) -> TenantOut:
        """A tenant (operator)."""
        response = self._send(_routes.GET_TENANT, path={"tenant_id": tenant_id})
        return as_model(response, TenantOut)

    def patch_tenant(
        self,
        tenant_id: str,
        *,
        name: str | NotGiven = NOT_GIVEN,
        status: Literal["active", "suspended"] | NotGiven = NOT_GIVEN,
    ) -> TenantOut:
        """Renames, suspends or reactivates a tenant (operator)."""
        body = body_of(TenantPatch, {"name": name, "status": status})
        response = self._send(_routes.PATCH_TENANT, path={"tenant_id": tenant_id}, body=body)
        return as_model(response, TenantOut)

    def suspend_tenant(self, tenant_id: str) -> TenantOut:
        """Suspends a tenant (operator; soft: its data and history stay)."""
        response = self._send(_routes.SUSPEND_TENANT, path={"tenant_id": tenant_id})
        return as_model(response, TenantOut)

    def bootstrap_tenant_authz(self, tenant_id: str) -> TenantOut:
        """Runs a tenant's access-control bootstrap again (operator; resumable, idempotent)."""
        path = {"tenant_id": tenant_id}
        return as_model(self._send(_routes.BOOTSTRAP_TENANT_AUTHZ, path=path), TenantOut)

    def get_own_tenant(self) -> TenantOut:
        """The caller's own tenant (any tenant key)."""
        return as_model(self._send(_routes.GET_OWN_TENANT), TenantOut)

    # -- API keys -----------------------------------------------------------------------------

    def list_api_keys(self) -> list[ApiKeyOut]:
        """The tenant's keys, oldest first (never their secrets)."""
        return as_models(self._send(_routes.LIST_API_KEYS), ApiKeyOut)

    def mint_api_key(
        self,
        *,
        scopes: Sequence[Scope],
        actor: str,
        name: str | NotGiven = NOT_GIVEN,
        constraints: ConstraintsParam | None | NotGiven = NOT_GIVEN,
    ) -> ApiKeyMinted:
        """Mints a key; its secret (`key`) is in this answer only. A key mints only the scopes
        and constraints it holds itself (403 ``scope_escalation``)."""
        fields = {"scopes": list(scopes), "actor": actor, "name": name, "constraints": constraints}
        body = body_of(ApiKeyCreate, fields)
        return as_model(self._send(_routes.MINT_API_KEY, body=body), ApiKeyMinted)

    def patch_api_key(
        self,
        key_row_id: str,
        *,
        name: str | None | NotGiven = NOT_GIVEN,
        constraints: ConstraintsParam | None | NotGiven = NOT_GIVEN,
    ) -> ApiKeyOut:
        """Renames a key or tightens its constraints in place (same secret)."""
        body = body_of(ApiKeyPatch, {"name": name, "constraints": constraints})
        path = {"key_row_id": key_row_id}
        return as_model(self._send(_routes.PATCH_API_KEY, path=path, body=body), ApiKeyOut)

    def revoke_api_key(self, key_row_id: str) -> ApiKeyOut:
        """Revokes a key: 401 from its next request."""
        path = {"key_row_id": key_row_id}
        return as_model(self._send(_routes.REVOKE_API_KEY, path=path), ApiKeyOut)

    def rotate_api_key(self, key_row_id: str) -> ApiKeyMinted:
        """A new secret on the same key row (in this answer only); the old one fails from the
        next request."""
        path = {"key_row_id": key_row_id}
        return as_model(self._send(_routes.ROTATE_API_KEY, path=path), ApiKeyMinted)

    # -- catalogue: resources -----------------------------------------------------------------

    def list_resources(self) -> list[ResourceOut]:
        """The tenant's resources, oldest first."""
        return as_models(self._send(_routes.LIST_RESOURCES), ResourceOut)

    def create_resource(
        self,
        *,
        name: str,
        description: str | NotGiven = NOT_GIVEN,
        unit: str | NotGiven = NOT_GIVEN,
    ) -> ResourceOut:
        """Creates a resource (a thing counted; consume items name it by `name`)."""
        body = body_of(ResourceCreate, {"name": name, "description": description, "unit": unit})
        return as_model(self._send(_routes.CREATE_RESOURCE, body=body), ResourceOut)

    def get_resource(self, resource_id: str) -> ResourceOut:
        """A resource."""
        path = {"resource_id": resource_id}
        return as_model(self._send(_routes.GET_RESOURCE, path=path), ResourceOut)

    def patch_resource(
        self,
        resource_id: str,
        *,
        name: str | NotGiven = NOT_GIVEN,
        description: str | NotGiven = NOT_GIVEN,
        unit: str | NotGiven = NOT_GIVEN,
    ) -> ResourceOut:
        """Changes a resource."""
        body = body_of(ResourcePatch, {"name": name, "description": description, "unit": unit})
        path = {"resource_id": resource_id}
        return as_model(self._send(_routes.PATCH_RESOURCE, path=path, body=body), ResourceOut)

    def delete_resource(self, resource_id: str) -> None:
        """Deletes a resource (409 ``in_use`` while a policy or an alert rule names it)."""
        self._send(_routes.DELETE_RESOURCE, path={"resource_id": resource_id})

    # -- catalogue: policies ------------------------------------------------------------------

    def list_policies(self) -> list[PolicyOut]:
        """The tenant's policies, oldest first."""
        return as_models(self._send(_routes.LIST_POLICIES), PolicyOut)

    def create_policy(
        self,
        *,
        name: str,
        resource_id: str,
        kind: Literal["quota", "rate_limit"],
        limit_amount: int | None | NotGiven = NOT_GIVEN,
        window_kind: Literal["fixed", "rolling", "lifetime"] | None | NotGiven = NOT_GIVEN,
        window_unit: Literal["minute", "hour", "day", "week", "month"]
        | None
        | NotGiven = NOT_GIVEN,
        window_size: int | None | NotGiven = NOT_GIVEN,
        tz: str | None | NotGiven = NOT_GIVEN,
        bucket_capacity: int | None | NotGiven = NOT_GIVEN,
        refill_rate_per_sec: float | None | NotGiven = NOT_GIVEN,
        enforcement_mode: Literal["strict", "fast"] | NotGiven = NOT_GIVEN,
        on_exceed: Literal["block", "allow_overage"] | NotGiven = NOT_GIVEN,
        on_backend_error: Literal["deny", "allow"] | None | NotGiven = NOT_GIVEN,
        enabled: bool | NotGiven = NOT_GIVEN,
    ) -> PolicyOut:
        """Creates a policy. A quota takes `limit_amount` and `window_kind` (fixed and rolling
        windows a `window_unit`, fixed ones a `tz`); a rate_limit takes `bucket_capacity` and
        `refill_rate_per_sec`."""
        body = body_of(
            PolicyCreate,
            {
                "name": name,
                "resource_id": resource_id,
                "kind": kind,
                "limit_amount": limit_amount,
                "window_kind": window_kind,
                "window_unit": window_unit,
                "window_size": window_size,
                "tz": tz,
                "bucket_capacity": bucket_capacity,
                "refill_rate_per_sec": refill_rate_per_sec,
                "enforcement_mode": enforcement_mode,
                "on_exceed": on_exceed,
                "on_backend_error": on_backend_error,
                "enabled": enabled,
            },
        )
        return as_model(self._send(_routes.CREATE_POLICY, body=body), PolicyOut)

    def get_policy(self, policy_id: str) -> PolicyOut:
        """A policy."""
        path = {"policy_id": policy_id}
        return as_model(self._send(_routes.GET_POLICY, path=path), PolicyOut)

    def patch_policy(
        self,
        policy_id: str,
        *,
        name: str | None | NotGiven = NOT_GIVEN,
        limit_amount: int | None | NotGiven = NOT_GIVEN,
        bucket_capacity: int | None | NotGiven = NOT_GIVEN,
        refill_rate_per_sec: float | None | NotGiven = NOT_GIVEN,
        on_exceed: Literal["block", "allow_overage"] | None | NotGiven = NOT_GIVEN,
        on_backend_error: Literal["deny", "allow"] | None | NotGiven = NOT_GIVEN,
        enabled: bool | None | NotGiven = NOT_GIVEN,
    ) -> PolicyOut:
        """Changes a policy: null (None) leaves a field unchanged, except `on_backend_error`,
        where it means the mode's default. Kind, window and enforcement mode are immutable."""
        body = body_of(
            PolicyPatch,
            {
                "name": name,
                "limit_amount": limit_amount,
                "bucket_capacity": bucket_capacity,
                "refill_rate_per_sec": refill_rate_per_sec,
                "on_exceed": on_exceed,
                "on_backend_error": on_backend_error,
                "enabled": enabled,
            },
        )
        path = {"policy_id": policy_id}
        return as_model(self._send(_routes.PATCH_POLICY, path=path, body=body), PolicyOut)

    def delete_policy(self, policy_id: str) -> None:
        """Deletes a policy (409 ``in_use`` while a plan or an alert rule names it)."""
        self._send(_routes.DELETE_POLICY, path={"policy_id": policy_id})

    # -- catalogue: plans ---------------------------------------------------------------------

    def list_plans(self) -> list[PlanOut]:
        """The tenant's plans, oldest first."""
        return as_models(self._send(_routes.LIST_PLANS), PlanOut)

    def create_plan(
        self,
        *,
        name: str,
        description: str | NotGiven = NOT_GIVEN,
        policy_ids: Sequence[str] | NotGiven = NOT_GIVEN,
    ) -> PlanOut:
        """Creates a plan: a group of policies a subject is assigned."""
        ids = policy_ids if isinstance(policy_ids, NotGiven) else list(policy_ids)
        body = body_of(PlanCreate, {"name": name, "description": description, "policy_ids": ids})
        return as_model(self._send(_routes.CREATE_PLAN, body=body), PlanOut)

    def get_plan(self, plan_id: str) -> PlanOut:
        """A plan."""
        return as_model(self._send(_routes.GET_PLAN, path={"plan_id": plan_id}), PlanOut)

    def patch_plan(
        self,
        plan_id: str,
        *,
        name: str | None | NotGiven = NOT_GIVEN,
        description: str | None | NotGiven = NOT_GIVEN,
    ) -> PlanOut:
        """Changes a plan."""
        body = body_of(PlanPatch, {"name": name, "description": description})
        path = {"plan_id": plan_id}
        return as_model(self._send(_routes.PATCH_PLAN, path=path, body=body), PlanOut)

    def delete_plan(self, plan_id: str) -> None:
        """Deletes a plan (409 ``in_use`` while a subject is assigned it)."""
        self._send(_routes.DELETE_PLAN, path={"plan_id": plan_id})

    def put_plan_policies(self, plan_id: str, *, policy_ids: Sequence[str]) -> PlanOut:
        """Replaces a plan's policies."""
        body = body_of(PlanPoliciesPut, {"policy_ids": list(policy_ids)})
        path = {"plan_id": plan_id}
        return as_model(self._send(_routes.PUT_PLAN_POLICIES, path=path, body=body), PlanOut)

    # -- subjects -----------------------------------------------------------------------------

    def put_assignment(self, subject: str, *, plan_id: str) -> AssignmentOut:
        """Assigns a plan to a subject (replacing its plan)."""
        body = body_of(AssignmentPut, {"plan_id": plan_id})
        response = self._send(_routes.PUT_ASSIGNMENT, path={"subject": subject}, body=body)
        return as_model(response, AssignmentOut)

    def get_assignment(self, subject: str) -> AssignmentOut:
        """A subject's plan (404 ``assignment_not_found`` when it has none)."""
        response = self._send(_routes.GET_ASSIGNMENT, path={"subject": subject})
        return as_model(response, AssignmentOut)

    def delete_assignment(self, subject: str) -> None:
        """Removes a subject's plan (its overrides stay)."""
        self._send(_routes.DELETE_ASSIGNMENT, path={"subject": subject})

    def put_overrides(self, subject: str, *, overrides: OverridesParam) -> list[OverrideOut]:
        """Replaces a subject's per-policy overrides."""
        body = body_of(OverridesPut, {"overrides": list(overrides)})
        response = self._send(_routes.PUT_OVERRIDES, path={"subject": subject}, body=body)
        return as_models(response, OverrideOut)

    def get_overrides(self, subject: str) -> list[OverrideOut]:
        """A subject's overrides."""
        response = self._send(_routes.GET_OVERRIDES, path={"subject": subject})
        return as_models(response, OverrideOut)

    def get_subject_usage(self, subject: str) -> SubjectUsageOut:
        """A subject's usage in each governing policy's current window."""
        response = self._send(_routes.GET_SUBJECT_USAGE, path={"subject": subject})
        return as_model(response, SubjectUsageOut)

    def get_subject_entitlements(self, subject: str) -> EntitlementsOut:
        """The policies that govern a subject, with its overrides applied."""
        response = self._send(_routes.GET_SUBJECT_ENTITLEMENTS, path={"subject": subject})
        return as_model(response, EntitlementsOut)

    # -- consumption and reservations ---------------------------------------------------------

    def consume(
        self,
        subject: str,
        items: ItemsParam,
        *,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | NotGiven = NOT_GIVEN,
    ) -> ConsumeResponse:
        """Spends amounts against a subject's policies: all admitted or nothing consumed. A denial
        is an answer (``allowed`` false, ``retry_after_seconds`` per policy), not an exception.
        Without `idempotency_key` the client makes one, which its retries reuse."""
        body = body_of(
            ConsumeRequest,
            {
                "subject": subject,
                "items": items_of(items),
                "idempotency_key": idempotency_key or new_idempotency_key(),
                "metadata": metadata,
            },
        )
        return as_model(self._send(_routes.CONSUME, body=body), ConsumeResponse)

    def check(self, subject: str, items: ItemsParam) -> CheckResponse:
        """What consume would answer, consuming nothing."""
        body = body_of(CheckRequest, {"subject": subject, "items": items_of(items)})
        return as_model(self._send(_routes.CHECK, body=body), CheckResponse)

    def refund(
        self,
        subject: str,
        items: ItemsParam,
        *,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | NotGiven = NOT_GIVEN,
    ) -> RefundResponse:
        """Gives amounts back to the current windows of the subject's quota policies. Without
        `idempotency_key` the client makes one, which its retries reuse."""
        body = body_of(
            RefundRequest,
            {
                "subject": subject,
                "items": items_of(items),
                "idempotency_key": idempotency_key or new_idempotency_key(),
                "metadata": metadata,
            },
        )
        return as_model(self._send(_routes.REFUND, body=body), RefundResponse)

    def reserve(
        self,
        subject: str,
        items: ItemsParam,
        *,
        ttl_seconds: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | NotGiven = NOT_GIVEN,
    ) -> ReserveResponse:
        """Holds amounts until commit, release or expiry (`ttl_seconds`, default 300). Decided as
        consume: a denial is an answer with nothing held (``allowed`` false). Without
        `idempotency_key` the client makes one, which its retries reuse. See `reservation()`."""
        body = body_of(
            ReserveRequest,
            {
                "subject": subject,
                "items": items_of(items),
                "ttl_seconds": ttl_seconds,
                "idempotency_key": idempotency_key or new_idempotency_key(),
                "metadata": metadata,
            },
        )
        return as_model(self._send(_routes.RESERVE, body=body), ReserveResponse)

    def get_reservation(self, reservation_id: str) -> ReservationOut:
        """A reservation: held, committed, released or expired."""
        path = {"reservation_id": reservation_id}
        return as_model(self._send(_routes.GET_RESERVATION, path=path), ReservationOut)

    def commit_reservation(
        self,
        reservation_id: str,
        *,
        actuals: ActualsParam | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
    ) -> CommitResponse:
        """Settles a reservation with what was actually used (a resource not in `actuals`
        commits what was held). Never refused for exceeding: ``overage`` says how far past a
        limit. Without `idempotency_key` the client makes one, which its retries reuse."""
        given = actuals if isinstance(actuals, NotGiven) else items_of(actuals)
        body = body_of(
            CommitRequest,
            {"actuals": given, "idempotency_key": idempotency_key or new_idempotency_key()},
        )
        path = {"reservation_id": reservation_id}
        response = self._send(_routes.COMMIT_RESERVATION, path=path, body=body)
        return as_model(response, CommitResponse)

    def release_reservation(self, reservation_id: str) -> ReleaseResponse:
        """Gives a reservation's hold back (idempotent: a retry is safe without a key)."""
        body = body_of(ReleaseRequest, {})
        path = {"reservation_id": reservation_id}
        response = self._send(_routes.RELEASE_RESERVATION, path=path, body=body)
        return as_model(response, ReleaseResponse)

    def reservation(
        self,
        subject: str,
        items: ItemsParam,
        *,
        ttl_seconds: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | NotGiven = NOT_GIVEN,
    ) -> Reservation:
        """A reservation as a context manager: reserves on enter (`ReservationDenied` when
        denied: nothing is held and the body does not run), commits on a clean exit, releases
        on an exception (which goes on). See `Reservation`.

            with client.reservation("user-1", {"tokens": 500}) as held:
                used = work()
                held.actuals["tokens"] = used   # none set: the held amounts are committed
        """
        return Reservation(
            self,
            subject,
            items,
            ttl_seconds=ttl_seconds,
            idempotency_key=idempotency_key,
            metadata=metadata,
        )

    # -- reporting ----------------------------------------------------------------------------

    def read_audit(
        self,
        *,
        actor: str | None = None,
        action: str | None = None,
        from_: datetime | str | None = None,
        to: datetime | str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> AuditPage:
        """One page of the tenant's admin audit, oldest first (`iter_audit` walks every page)."""
        query = query_of(
            {
                "actor": actor,
                "action": action,
                "from": from_,
                "to": to,
                "cursor": cursor,
                "limit": limit,
            }
        )
        return as_model(self._send(_routes.READ_AUDIT, query=query), AuditPage)

    def iter_audit(
        self,
        *,
        actor: str | None = None,
        action: str | None = None,
        from_: datetime | str | None = None,
        to: datetime | str | None = None,
        limit: int | None = None,
    ) -> Iterator[AuditEntry]:
        """Every audit entry matching, page after page (`limit` is the page size)."""
        cursor: str | None = None
        while True:
            page = self.read_audit(
                actor=actor, action=action, from_=from_, to=to, cursor=cursor, limit=limit
            )
            for entry in page.entries:
                yield entry
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def read_ledger(
        self,
        *,
        subject: str | None = None,
        resource: str | None = None,
        from_: datetime | str | None = None,
        to: datetime | str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> LedgerPage:
        """One page of the consumption ledger, oldest first (`iter_ledger` walks every page)."""
        query = query_of(
            {
                "subject": subject,
                "resource": resource,
                "from": from_,
                "to": to,
                "cursor": cursor,
                "limit": limit,
            }
        )
        return as_model(self._send(_routes.READ_LEDGER, query=query), LedgerPage)

    def iter_ledger(
        self,
        *,
        subject: str | None = None,
        resource: str | None = None,
        from_: datetime | str | None = None,
        to: datetime | str | None = None,
        limit: int | None = None,
    ) -> Iterator[LedgerEntry]:
        """Every ledger entry matching, page after page (`limit` is the page size)."""
        cursor: str | None = None
        while True:
            page = self.read_ledger(
                subject=subject, resource=resource, from_=from_, to=to, cursor=cursor, limit=limit
            )
            for entry in page.entries:
                yield entry
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def usage_summary(
        self,
        *,
        granularity: Literal["hour", "day"] | None = None,
        resource: str | None = None,
        subject: str | None = None,
        from_: datetime | str | None = None,
        to: datetime | str | None = None,
    ) -> list[SummaryRow]:
        """Net usage per UTC hour or day, subject and resource."""
        query = query_of(
            {
                "granularity": granularity,
                "resource": resource,
                "subject": subject,
                "from": from_,
                "to": to,
            }
        )
        return as_models(self._send(_routes.USAGE_SUMMARY, query=query), SummaryRow)

    # -- alerts -------------------------------------------------------------------------------

    def list_alert_rules(self) -> list[AlertRuleOut]:
        """The tenant's alert rules, oldest first."""
        return as_models(self._send(_routes.LIST_ALERT_RULES), AlertRuleOut)

    def create_alert_rule(
        self,
        *,
        name: str,
        threshold_pct: int,
        channels: ChannelsParam,
        policy_id: str | None | NotGiven = NOT_GIVEN,
        resource_id: str | None | NotGiven = NOT_GIVEN,
        subject_filter: str | None | NotGiven = NOT_GIVEN,
        cooldown_seconds: int | NotGiven = NOT_GIVEN,
        enabled: bool | NotGiven = NOT_GIVEN,
    ) -> AlertRuleOut:
        """Creates an alert rule: fires when a window's usage crosses `threshold_pct` of its
        limit, notifying `channels` (webhook endpoint ids, e-mail addresses)."""
        body = body_of(
            AlertRuleCreate,
            {
                "name": name,
                "threshold_pct": threshold_pct,
                "channels": channels,
                "policy_id": policy_id,
                "resource_id": resource_id,
                "subject_filter": subject_filter,
                "cooldown_seconds": cooldown_seconds,
                "enabled": enabled,
            },
        )
        return as_model(self._send(_routes.CREATE_ALERT_RULE, body=body), AlertRuleOut)

    def get_alert_rule(self, rule_id: str) -> AlertRuleOut:
        """An alert rule."""
        path = {"rule_id": rule_id}
        return as_model(self._send(_routes.GET_ALERT_RULE, path=path), AlertRuleOut)

    def patch_alert_rule(
        self,
        rule_id: str,
        *,
        name: str | None | NotGiven = NOT_GIVEN,
        threshold_pct: int | None | NotGiven = NOT_GIVEN,
        channels: ChannelsParam | None | NotGiven = NOT_GIVEN,
        cooldown_seconds: int | None | NotGiven = NOT_GIVEN,
        enabled: bool | None | NotGiven = NOT_GIVEN,
    ) -> AlertRuleOut:
        """Changes an alert rule (null or absent leaves a field as it is)."""
        body = body_of(
            AlertRulePatch,
            {
                "name": name,
                "threshold_pct": threshold_pct,
                "channels": channels,
                "cooldown_seconds": cooldown_seconds,
                "enabled": enabled,
            },
        )
        path = {"rule_id": rule_id}
        response = self._send(_routes.PATCH_ALERT_RULE, path=path, body=body)
        return as_model(response, AlertRuleOut)

    def delete_alert_rule(self, rule_id: str) -> None:
        """Deletes an alert rule (its events are kept)."""
        self._send(_routes.DELETE_ALERT_RULE, path={"rule_id": rule_id})

    def list_alert_events(
        self, *, subject: str | None = None, limit: int | None = None
    ) -> list[AlertEventOut]:
        """Alert events, newest first."""
        query = query_of({"subject": subject, "limit": limit})
        return as_models(self._send(_routes.LIST_ALERT_EVENTS, query=query), AlertEventOut)

    # -- webhooks -----------------------------------------------------------------------------

    def list_webhook_endpoints(self) -> list[WebhookEndpointOut]:
        """The tenant's webhook endpoints, oldest first (never their secrets)."""
        return as_models(self._send(_routes.LIST_WEBHOOK_ENDPOINTS), WebhookEndpointOut)

    def create_webhook_endpoint(
        self,
        *,
        url: str,
        description: str | NotGiven = NOT_GIVEN,
        event_types: Sequence[Literal["alert.triggered"]] | NotGiven = NOT_GIVEN,
        enabled: bool | NotGiven = NOT_GIVEN,
    ) -> WebhookEndpointCreated:
        """Creates a webhook endpoint (https); its signing secret is in this answer only."""
        types = event_types if isinstance(event_types, NotGiven) else list(event_types)
        body = body_of(
            WebhookEndpointCreate,
            {"url": url, "description": description, "event_types": types, "enabled": enabled},
        )
        response = self._send(_routes.CREATE_WEBHOOK_ENDPOINT, body=body)
        return as_model(response, WebhookEndpointCreated)

    def get_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpointOut:
        """A webhook endpoint (never its secret)."""
        path = {"endpoint_id": endpoint_id}
        response = self._send(_routes.GET_WEBHOOK_ENDPOINT, path=path)
        return as_model(response, WebhookEndpointOut)

    def patch_webhook_endpoint(
        self,
        endpoint_id: str,
        *,
        url: str | None | NotGiven = NOT_GIVEN,
        description: str | None | NotGiven = NOT_GIVEN,
        event_types: Sequence[Literal["alert.triggered"]] | None | NotGiven = NOT_GIVEN,
        enabled: bool | None | NotGiven = NOT_GIVEN,
    ) -> WebhookEndpointOut:
        """Changes a webhook endpoint (null or absent leaves a field as it is)."""
        types = (
            event_types
            if event_types is None or isinstance(event_types, NotGiven)
            else list(event_types)
        )
        body = body_of(
            WebhookEndpointPatch,
            {"url": url, "description": description, "event_types": types, "enabled": enabled},
        )
        path = {"endpoint_id": endpoint_id}
        response = self._send(_routes.PATCH_WEBHOOK_ENDPOINT, path=path, body=body)
        return as_model(response, WebhookEndpointOut)

    def delete_webhook_endpoint(self, endpoint_id: str) -> None:
        """Deletes a webhook endpoint; its unfinished deliveries are cancelled (409 ``in_use``
        while an alert rule names it)."""
        self._send(_routes.DELETE_WEBHOOK_ENDPOINT, path={"endpoint_id": endpoint_id})

    def test_webhook_endpoint(self, endpoint_id: str) -> WebhookTestResult:
        """Sends a signed webhook.test now and answers what the receiver did."""
        path = {"endpoint_id": endpoint_id}
        response = self._send(_routes.TEST_WEBHOOK_ENDPOINT, path=path)
        return as_model(response, WebhookTestResult)

    def list_webhook_deliveries(
        self, *, endpoint_id: str | None = None, limit: int | None = None
    ) -> list[DeliveryOut]:
        """The tenant's webhook deliveries, newest first."""
        query = query_of({"endpoint_id": endpoint_id, "limit": limit})
        response = self._send(_routes.LIST_WEBHOOK_DELIVERIES, query=query)
        return as_models(response, DeliveryOut)


class Reservation:
    """A reservation held for the body of its ``with client.reservation(...)`` block.

    On enter it reserves (`ReservationDenied` when denied). On a clean exit it commits:
    with `actuals` if the body set any (``held.actuals["tokens"] = 37``; a resource left out
    commits what was held), else with the held amounts. On an exception it releases the hold
    and the exception goes on (should the release fail too, the hold expires at its ttl and
    the release's error is kept in `release_error`). The body may also settle it itself with
    `commit()` or `release()`; the exit then does nothing more.
    """

    def __init__(
        self,
        client: Client,
        subject: str,
        items: ItemsParam,
        *,
        ttl_seconds: int | NotGiven = NOT_GIVEN,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | NotGiven = NOT_GIVEN,
    ) -> None:
        self._client = client
        self.subject = subject
        self._items = items
        self._ttl_seconds = ttl_seconds
        self._idempotency_key = idempotency_key or new_idempotency_key()
        self._commit_key = f"{self._idempotency_key}:commit"[:200]
        self._metadata = metadata
        self.actuals: dict[str, int] = {}
        """What the body used, by resource name: committed on a clean exit."""
        self.reserved: ReserveResponse | None = None
        self.committed: CommitResponse | None = None
        self.released: ReleaseResponse | None = None
        self.release_error: BaseException | None = None

    @property
    def id(self) -> str:
        """The reservation's id."""
        if self.reserved is None or self.reserved.reservation_id is None:
            raise RuntimeError("not reserved: enter the context manager first")
        return self.reserved.reservation_id

    @property
    def settled(self) -> bool:
        return self.committed is not None or self.released is not None

    def commit(self, actuals: ActualsParam | NotGiven = NOT_GIVEN) -> CommitResponse:
        """Commits now, with `actuals` (else those set on `actuals`, else the held amounts)."""
        given: ActualsParam | NotGiven = actuals
        if isinstance(given, NotGiven) and self.actuals:
            given = dict(self.actuals)
        self.committed = self._client.commit_reservation(
            self.id, actuals=given, idempotency_key=self._commit_key
        )
        return self.committed

    def release(self) -> ReleaseResponse:
        """Releases the hold now."""
        self.released = self._client.release_reservation(self.id)
        return self.released

    def __enter__(self) -> Reservation:
        reserved = self._client.reserve(
            self.subject,
            self._items,
            ttl_seconds=self._ttl_seconds,
            idempotency_key=self._idempotency_key,
            metadata=self._metadata,
        )
        if not reserved.allowed or reserved.reservation_id is None:
            raise ReservationDenied(reserved)
        self.reserved = reserved
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.settled:
            return
        if exc is None:
            self.commit()
            return
        try:
            self.release()
        except Exception as error:  # the body's exception matters more: it goes on
            self.release_error = error
            if hasattr(exc, "add_note"):
                exc.add_note(f"releasing reservation {self.id} failed too: {error!r}")
