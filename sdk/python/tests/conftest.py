"""Fixtures: the live service (QUOTA_BASE_URL, QUOTA_OPERATOR_KEY) and tenants of the tests' own.

test/integration/quota/python-sdk.test.ts starts the service and runs this suite with those
set; without them the live tests are skipped (the pure ones still run).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from quota_client import AsyncClient, Client, RetryPolicy

SDK_ROOT = Path(__file__).resolve().parent.parent

# The service retries a new tenant's key 503 tenant_bootstrap_pending (Retry-After: 1) until its
# grants are written; on a busy CI machine that may take longer than the default 5 tries.
PATIENT = RetryPolicy(max_retries=30, max_delay=2.0)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def base_url() -> str:
    url = os.environ.get("QUOTA_BASE_URL")
    if not url or not os.environ.get("QUOTA_OPERATOR_KEY"):
        pytest.skip("needs the live service: QUOTA_BASE_URL and QUOTA_OPERATOR_KEY")
    return url


@pytest.fixture(scope="session")
def operator_key(base_url: str) -> str:
    return os.environ["QUOTA_OPERATOR_KEY"]


@pytest.fixture(scope="session")
def operator(base_url: str, operator_key: str) -> Iterator[Client]:
    with Client(operator_key, base_url=base_url) as client:
        yield client


@dataclass
class Tenant:
    id: str
    key: str
    key_id: str
    actor: str


@pytest.fixture(scope="session")
def new_tenant(operator: Client, base_url: str) -> Callable[[], Tenant]:
    """Makes a tenant and waits (by the client's own retries) until its first key is granted."""

    def make() -> Tenant:
        actor = f"{unique('admin')}@sdk.test"
        created = operator.create_tenant(name=unique("sdk tenant"), admin_actor=actor)
        with Client(created.admin_key.key, base_url=base_url, retry=PATIENT) as client:
            client.get_own_tenant()
        return Tenant(created.id, created.admin_key.key, created.admin_key.id, actor)

    return make


@pytest.fixture(scope="session")
def tenant(new_tenant: Callable[[], Tenant]) -> Tenant:
    """The tenant most tests share (each names its own resources and subjects)."""
    return new_tenant()


@pytest.fixture
def client(tenant: Tenant, base_url: str) -> Iterator[Client]:
    with Client(tenant.key, base_url=base_url) as quota:
        yield quota


@pytest.fixture
async def aclient(tenant: Tenant, base_url: str) -> Any:
    async with AsyncClient(tenant.key, base_url=base_url) as quota:
        yield quota


@dataclass
class Plan:
    resource: str
    resource_id: str
    policy_id: str
    plan_id: str


def make_plan(
    client: Client,
    limit: int = 100,
    enforcement_mode: str = "strict",
    on_exceed: str = "block",
) -> Plan:
    """A resource, a lifetime quota of `limit` on it and a plan of that quota."""
    resource = client.create_resource(name=unique("tokens"))
    policy = client.create_policy(
        name=unique("quota"),
        resource_id=resource.id,
        kind="quota",
        limit_amount=limit,
        window_kind="lifetime",
        enforcement_mode=enforcement_mode,  # type: ignore[arg-type]
        on_exceed=on_exceed,  # type: ignore[arg-type]
    )
    plan = client.create_plan(name=unique("plan"), policy_ids=[policy.id])
    return Plan(resource.name, resource.id, policy.id, plan.id)


def assigned_subject(client: Client, plan: Plan) -> str:
    subject = unique("user")
    client.put_assignment(subject, plan_id=plan.plan_id)
    return subject
