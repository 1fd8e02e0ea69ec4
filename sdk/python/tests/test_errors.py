"""Each exception class from a real refusal of the live service, carrying the spec's detail."""

from __future__ import annotations

import httpx
import pydantic
import pytest
from conftest import assigned_subject, make_plan, unique

from quota_client import (
    AuthenticationError,
    Client,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    QuotaError,
    ServiceUnavailableError,
    ValidationError,
)


def test_401_unknown_key(base_url: str) -> None:
    with Client("qk_nobody_nosecret", base_url=base_url) as quota:
        with pytest.raises(AuthenticationError) as raised:
            quota.get_own_tenant()
    error = raised.value
    assert error.status == 401 and error.detail == "unauthorized" and error.code == "unauthorized"
    assert isinstance(error, QuotaError) and isinstance(error.response, httpx.Response)
    assert error.request.url.path == "/v1/tenant"


def test_403_insufficient_scope_and_operator_routes(client: Client, base_url: str) -> None:
    minted = client.mint_api_key(scopes=["check"], actor=f"{unique('checker')}@sdk.test")
    with Client(minted.key, base_url=base_url) as checker:
        with pytest.raises(PermissionDeniedError) as raised:
            checker.consume(unique("user"), {"tokens": 1})
        assert raised.value.detail == "insufficient_scope"
    with pytest.raises(PermissionDeniedError) as operator_only:
        client.list_tenants()
    assert operator_only.value.detail == "operator_key_required"


def test_403_constraint_violation(client: Client, base_url: str) -> None:
    plan = make_plan(client)
    minted = client.mint_api_key(
        scopes=["consume"],
        actor=f"{unique('scoped')}@sdk.test",
        constraints={"subject_prefix": "team-a:"},
    )
    with Client(minted.key, base_url=base_url) as scoped:
        with pytest.raises(PermissionDeniedError) as raised:
            scoped.consume("team-b:1", {plan.resource: 1})
    assert raised.value.detail == "constraint_violation"


def test_404_not_found(client: Client) -> None:
    with pytest.raises(NotFoundError) as raised:
        client.get_plan("pln_does_not_exist")
    assert raised.value.status == 404 and raised.value.detail.endswith("not_found")
    with pytest.raises(NotFoundError) as unassigned:
        client.get_assignment(unique("nobody"))
    assert unassigned.value.detail == "assignment_not_found"


def test_409_conflicts(client: Client) -> None:
    name = unique("tokens")
    client.create_resource(name=name)
    with pytest.raises(ConflictError) as taken:
        client.create_resource(name=name)
    assert taken.value.detail == "name_taken"

    plan = make_plan(client)
    subject = assigned_subject(client, plan)
    key = unique("key")
    client.consume(subject, {plan.resource: 1}, idempotency_key=key)
    with pytest.raises(ConflictError) as reused:
        client.consume(subject, {plan.resource: 2}, idempotency_key=key)
    assert reused.value.detail == "idempotency_key_reused"


def test_422_carries_the_list_of_failures(client: Client) -> None:
    with pytest.raises(ValidationError) as raised:
        client.create_policy(
            name=unique("quota"),
            resource_id="res_not_in_the_tenant",
            kind="quota",
            limit_amount=10,
            window_kind="lifetime",
        )
    error = raised.value
    assert error.status == 422 and isinstance(error.detail, list) and error.code is None
    assert [(e.loc, e.type) for e in error.errors] == [
        (["body", "resource_id"], "reference_not_found")
    ]


def test_arguments_outside_the_documents_bounds_are_refused_before_sending(client: Client) -> None:
    with pytest.raises(pydantic.ValidationError):
        client.consume("user-1", {"tokens": 0})  # amount >= 1
    with pytest.raises(pydantic.ValidationError):
        client.check("bad{subject}", {"tokens": 1})


def test_503_tenant_bootstrap_pending_is_a_real_refusal_then_retried(
    operator: Client, base_url: str
) -> None:
    """A new tenant's key is 503 tenant_bootstrap_pending (Retry-After: 1) until the bootstrap
    workflow has written its grants (about 0.1 s here): without retries it raises; with them the
    same call goes through."""
    seen: list[int] = []

    def record(response: httpx.Response) -> None:
        seen.append(response.status_code)

    # Made before the tenant: a new httpx.Client takes longer (its TLS context) than the window.
    http = httpx.Client(event_hooks={"response": [record]})
    with Client("qk_none_yet", base_url=base_url, http_client=http, max_retries=0) as idle:
        for _ in range(3):  # the window is short: a tenant whose grants came first is no test
            created = operator.create_tenant(name=unique("sdk tenant"))
            quota = idle.with_options(api_key=created.admin_key.key)
            try:
                quota.get_own_tenant()
            except ServiceUnavailableError as error:
                assert error.detail == "tenant_bootstrap_pending" and error.retry_after == 1.0
                break
        else:
            pytest.skip("each tenant's bootstrap finished before its first request")
        seen.clear()
        patient = quota.with_options(max_retries=30)
        assert patient.get_own_tenant().id == created.id
    http.close()
    assert seen[-1] == 200 and (len(seen) == 1 or set(seen[:-1]) == {503})
