"""Every other operation once against the live service, sync and async: the catalogue, keys,
subjects, reporting, alerts, webhooks, operator routes, probes and MCP."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import Tenant, assigned_subject, make_plan, unique

from quota_client import (
    AsyncClient,
    AuthenticationError,
    Client,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
)


def test_probes(client: Client) -> None:
    assert client.healthz() and client.ping()
    assert isinstance(client.readyz(), dict)  # its 503 (a backend down) is answered too
    assert isinstance(client.jobs_health().healthy, bool)
    assert client.worker_health().status in ("ok", "lagging")
    assert "http_request_duration_seconds" in client.metrics()
    assert "Retry rule" in client.agent_guide()
    assert client.open_api_document()["openapi"].startswith("3.")


def test_catalogue(client: Client) -> None:
    resource = client.create_resource(
        name=unique("tokens"), description="LLM tokens", unit="tokens"
    )
    assert client.get_resource(resource.id) == resource
    renamed = client.patch_resource(resource.id, description="tokens in and out")
    assert renamed.description == "tokens in and out" and renamed.unit == "tokens"
    assert resource.id in {r.id for r in client.list_resources()}

    quota = client.create_policy(
        name=unique("daily"),
        resource_id=resource.id,
        kind="quota",
        limit_amount=1000,
        window_kind="fixed",
        window_unit="day",
        tz="Europe/Paris",
    )
    limiter = client.create_policy(
        name=unique("rate"),
        resource_id=resource.id,
        kind="rate_limit",
        bucket_capacity=10,
        refill_rate_per_sec=0.5,
        enforcement_mode="strict",
    )
    assert limiter.refill_rate_per_sec == 0.5 and limiter.on_backend_error is None
    patched = client.patch_policy(quota.id, limit_amount=2000, on_backend_error="deny")
    assert patched.limit_amount == 2000 and patched.on_backend_error == "deny"
    # None means "the mode's default" for on_backend_error: sent as null, not left out.
    assert client.patch_policy(quota.id, on_backend_error=None).on_backend_error is None
    assert client.get_policy(quota.id).limit_amount == 2000
    assert {quota.id, limiter.id} <= {p.id for p in client.list_policies()}

    plan = client.create_plan(name=unique("pro"), description="pro", policy_ids=[quota.id])
    assert client.get_plan(plan.id).policy_ids == [quota.id]
    both = client.put_plan_policies(plan.id, policy_ids=[quota.id, limiter.id])
    assert set(both.policy_ids) == {quota.id, limiter.id}
    assert client.patch_plan(plan.id, name=unique("pro2")).description == "pro"
    assert plan.id in {p.id for p in client.list_plans()}

    with pytest.raises(ConflictError) as in_use:
        client.delete_resource(resource.id)
    assert in_use.value.detail == "in_use"
    client.delete_plan(plan.id)
    client.delete_policy(quota.id)
    client.delete_policy(limiter.id)
    client.delete_resource(resource.id)
    with pytest.raises(NotFoundError):
        client.get_resource(resource.id)


def test_subjects(client: Client) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    assert client.get_assignment(subject).plan_id == plan.plan_id
    overrides = client.put_overrides(
        subject, overrides=[{"policy_id": plan.policy_id, "limit_amount": 5}]
    )
    assert overrides[0].limit_amount_override == 5
    assert client.get_overrides(subject) == overrides
    assert client.get_subject_entitlements(subject).policies[0].limit_amount == 5
    assert client.get_subject_usage(subject).plan_id == plan.plan_id
    client.delete_assignment(subject)
    with pytest.raises(NotFoundError):
        client.get_assignment(subject)


def test_keys(client: Client, base_url: str) -> None:
    minted = client.mint_api_key(
        name="reader", scopes=["catalog:read"], actor=f"{unique('reader')}@sdk.test"
    )
    assert minted.key.startswith("qk_") and minted.scopes == ["catalog:read"]
    assert minted.id in {k.id for k in client.list_api_keys()}
    tightened = client.patch_api_key(minted.id, constraints={"catalog_name_prefix": "x-"})
    assert tightened.constraints is not None
    rotated = client.rotate_api_key(minted.id)
    assert rotated.key != minted.key
    with Client(rotated.key, base_url=base_url) as reader:
        reader.list_resources()
        with pytest.raises(PermissionDeniedError):
            reader.list_api_keys()
    assert client.revoke_api_key(minted.id).status == "revoked"
    with Client(rotated.key, base_url=base_url) as revoked, pytest.raises(AuthenticationError):
        revoked.list_resources()


def test_reporting(client: Client, tenant: Tenant) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    for amount in (1, 2, 3):
        client.consume(subject, {plan.resource: amount})
    page = client.read_ledger(subject=subject, limit=2)
    assert [e.amount for e in page.entries] == [1, 2] and page.next_cursor
    assert [e.amount for e in client.iter_ledger(subject=subject, limit=2)] == [1, 2, 3]
    rows = client.usage_summary(subject=subject, granularity="hour")
    assert sum(row.net for row in rows) == 6 and {row.subject for row in rows} == {subject}
    audit = client.read_audit(actor=tenant.actor, limit=1)
    assert audit.entries and audit.entries[0].actor == tenant.actor
    assert sum(1 for _ in client.iter_audit(actor=tenant.actor, action="plan.create")) >= 1


def test_alerts_and_webhooks(client: Client) -> None:
    plan = make_plan(client, limit=10)
    # Loopback: the tests' service is allowed to send there; nothing listens, so it fails fast.
    endpoint = client.create_webhook_endpoint(url="https://127.0.0.1:9/hook", description="sdk")
    assert endpoint.secret.startswith("whsec_")
    assert client.get_webhook_endpoint(endpoint.id).url == "https://127.0.0.1:9/hook"
    assert client.patch_webhook_endpoint(endpoint.id, enabled=False).enabled is False
    assert endpoint.id in {e.id for e in client.list_webhook_endpoints()}
    tested = client.test_webhook_endpoint(endpoint.id)
    assert tested.delivered is False
    assert any(
        d.endpoint_id == endpoint.id
        for d in client.list_webhook_deliveries(endpoint_id=endpoint.id)
    )

    rule = client.create_alert_rule(
        name=unique("80 percent"),
        policy_id=plan.policy_id,
        threshold_pct=80,
        channels={"webhooks": [endpoint.id]},
    )
    assert client.get_alert_rule(rule.id).threshold_pct == 80
    assert client.patch_alert_rule(rule.id, threshold_pct=50).threshold_pct == 50
    assert rule.id in {r.id for r in client.list_alert_rules()}
    subject = assigned_subject(client, plan)
    client.consume(subject, {plan.resource: 6})
    events = client.list_alert_events(subject=subject)
    assert [(e.rule_id, e.threshold_pct) for e in events] == [(rule.id, 50)]
    with pytest.raises(ConflictError):
        client.delete_webhook_endpoint(endpoint.id)
    client.delete_alert_rule(rule.id)
    client.delete_webhook_endpoint(endpoint.id)


def test_operator_routes(operator: Client, new_tenant: Callable[[], Tenant]) -> None:
    tenant = new_tenant()
    assert operator.get_tenant(tenant.id).bootstrap.state == "done"
    assert tenant.id in {t.id for t in operator.list_tenants()}
    assert operator.patch_tenant(tenant.id, name=unique("renamed")).status == "active"
    assert operator.bootstrap_tenant_authz(tenant.id).id == tenant.id
    assert operator.suspend_tenant(tenant.id).status == "suspended"
    assert operator.patch_tenant(tenant.id, status="active").status == "active"
    report = operator.run_job("reservation-expiry")
    assert report.job == "reservation-expiry" and report.ok
    assert any(run.job == "reservation-expiry" for run in operator.list_jobs(limit=10).runs)
    with pytest.raises(NotFoundError) as unknown:
        operator.run_job("no-such-job")
    assert unknown.value.detail == "job_not_found"


def test_mcp(client: Client) -> None:
    listed = client.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert listed["id"] == 1 and any(t["name"] == "consume" for t in listed["result"]["tools"])


@pytest.mark.anyio
async def test_the_async_client_has_parity(aclient: AsyncClient, client: Client) -> None:
    plan = make_plan(client, limit=10)
    subject = unique("user")
    await aclient.put_assignment(subject, plan_id=plan.plan_id)
    assert (await aclient.get_own_tenant()).status == "active"
    assert (await aclient.consume(subject, {plan.resource: 4})).results[0].remaining == 6
    assert not (await aclient.check(subject, {plan.resource: 7})).allowed
    await aclient.refund(subject, {plan.resource: 1})
    assert (await aclient.get_subject_usage(subject)).usage[0].used == 3
    assert [e.amount async for e in aclient.iter_ledger(subject=subject)] == [4, -1]
    assert plan.plan_id in {p.id for p in await aclient.list_plans()}
    assert (await aclient.healthz()) == client.healthz()
    with pytest.raises(NotFoundError):
        await aclient.get_reservation("rsv_nope")
    with pytest.raises(ConflictError) as taken:
        await aclient.create_resource(name=plan.resource)
    assert taken.value.detail == "name_taken"
