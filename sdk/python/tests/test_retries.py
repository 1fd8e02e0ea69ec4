"""The retry rule and the error mapping, on scripted answers (httpx.MockTransport): a 429 cannot
be provoked from the service, nor a broken connection at a chosen moment, so these pure tests
drive the client's loop; test_live_retries.py retries real refusals."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import quota_client._async_client as async_module
import quota_client._sync_client as sync_module
from quota_client import (
    APIConnectionError,
    AsyncClient,
    Client,
    ConflictError,
    RateLimitError,
    RetryPolicy,
    ServiceUnavailableError,
    ValidationError,
)
from quota_client._exceptions import parse_retry_after

BIG = 2**70

CONSUMED = {
    "allowed": True,
    "event_id": "evt_1",
    "degraded": False,
    "results": [
        {
            "policy_id": "pol_1",
            "policy_name": "quota",
            "resource": "tokens",
            "kind": "quota",
            "enforcement_mode": "strict",
            "source": "plan",
            "allowed": True,
            "requested": 5,
            "limit": BIG,
            "used": BIG - 1,
            "remaining": 1,
            "overage": 0,
            "window": None,
            "retry_after_seconds": None,
        }
    ],
}


class Script:
    """Answers requests in turn from `answers` (a response, or an exception to raise)."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def bodies(self) -> list[Any]:
        return [json.loads(request.content) for request in self.requests]


def refusal(status: int, detail: Any, **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"detail": detail}, headers=headers)


def consumed() -> httpx.Response:
    # Written as the service writes it: exact integers, whatever their size.
    return httpx.Response(
        200, content=json.dumps(CONSUMED).encode(), headers={"content-type": "application/json"}
    )


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits of both clients, recorded instead of slept."""
    waited: list[float] = []

    class FakeTime:
        @staticmethod
        def sleep(seconds: float) -> None:
            waited.append(seconds)

    class FakeAsyncio:
        @staticmethod
        async def sleep(seconds: float) -> None:
            waited.append(seconds)

    monkeypatch.setattr(sync_module, "time", FakeTime)
    monkeypatch.setattr(async_module, "asyncio", FakeAsyncio)
    return waited


def sync_client(script: Callable[[httpx.Request], httpx.Response], **options: Any) -> Client:
    http = httpx.Client(transport=httpx.MockTransport(script))
    return Client("qk_test_secret", base_url="http://quota.test", http_client=http, **options)


def async_client(script: Callable[[httpx.Request], httpx.Response], **options: Any) -> AsyncClient:
    http = httpx.AsyncClient(transport=httpx.MockTransport(script))
    return AsyncClient("qk_test_secret", base_url="http://quota.test", http_client=http, **options)


def test_backoff_doubles_from_one_second_with_jitter_and_stops_after_five_tries() -> None:
    policy = RetryPolicy()
    for retry, base in enumerate([1.0, 2.0, 4.0, 8.0]):
        for _ in range(20):
            delay = policy.delay(retry, None)
            assert delay is not None and base * 0.75 <= delay <= base * 1.25
    assert policy.delay(4, None) is None  # 5 tries in all: the agent guide's rule
    assert RetryPolicy(max_delay=3.0, jitter=0).backoff(10) == 3.0


def test_retry_after_in_seconds_or_as_a_date() -> None:
    request = httpx.Request("GET", "http://quota.test/")
    seconds = httpx.Response(429, headers={"Retry-After": "3"}, request=request)
    assert parse_retry_after(seconds) == 3.0
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    dated = parse_retry_after(httpx.Response(503, headers={"Retry-After": soon}, request=request))
    assert dated is not None and 25 <= dated <= 31
    assert parse_retry_after(httpx.Response(503, headers={"Retry-After": "soon"})) is None
    # Longer than the policy waits: not retried.
    late = httpx.Response(503, headers={"Retry-After": "3600"}, request=request)
    assert RetryPolicy().delay(0, late) is None


def test_a_429_is_retried_after_its_retry_after_with_the_same_idempotency_key(
    sleeps: list[float],
) -> None:
    script = Script(
        refusal(429, "rate_limited", **{"Retry-After": "2"}),
        refusal(429, "rate_limited", **{"Retry-After": "2"}),
        consumed(),
    )
    with sync_client(script) as quota:
        answer = quota.consume("user-1", {"tokens": 5})
    assert answer.allowed and answer.results[0].limit == BIG
    assert sleeps == [2.0, 2.0]
    keys = {body["idempotency_key"] for body in script.bodies()}
    assert len(script.requests) == 3 and len(keys) == 1 and next(iter(keys)).startswith("sdk_")


def test_a_503_is_retried_with_backoff_then_raised_after_five_tries(sleeps: list[float]) -> None:
    script = Script(*[refusal(503, "decision_contended") for _ in range(5)])
    with sync_client(script) as quota, pytest.raises(ServiceUnavailableError) as raised:
        quota.consume("user-1", [{"resource": "tokens", "amount": 5}], idempotency_key="mine")
    assert raised.value.status == 503 and raised.value.detail == "decision_contended"
    assert len(script.requests) == 5 and len(sleeps) == 4
    assert all(
        base * 0.75 <= s <= base * 1.25 for s, base in zip(sleeps, [1, 2, 4, 8], strict=True)
    )
    assert {body["idempotency_key"] for body in script.bodies()} == {"mine"}


def test_a_429_beyond_the_retries_raises_rate_limit_error(sleeps: list[float]) -> None:
    script = Script(
        refusal(429, "rate_limited", **{"Retry-After": "1"}),
        refusal(429, "rate_limited", **{"Retry-After": "1"}),
    )
    with sync_client(script, max_retries=1) as quota, pytest.raises(RateLimitError) as raised:
        quota.check("user-1", {"tokens": 1})
    assert raised.value.retry_after == 1.0 and raised.value.code == "rate_limited"
    assert len(script.requests) == 2


def test_other_refusals_are_not_retried(sleeps: list[float]) -> None:
    script = Script(refusal(409, "idempotency_key_reused"))
    with sync_client(script) as quota, pytest.raises(ConflictError) as raised:
        quota.consume("user-1", {"tokens": 5}, idempotency_key="k")
    assert raised.value.code == "idempotency_key_reused" and len(script.requests) == 1
    assert sleeps == []

    detail = [{"loc": ["body", "items", 0, "amount"], "msg": "too big", "type": "number.max"}]
    script = Script(refusal(422, detail))
    with sync_client(script) as quota, pytest.raises(ValidationError) as invalid:
        quota.check("user-1", {"tokens": 5})
    assert invalid.value.code is None
    assert invalid.value.errors[0].loc == ["body", "items", 0, "amount"]
    assert "body.items.0.amount" in str(invalid.value)


def test_a_lost_answer_of_a_spending_call_is_retried_with_the_same_key(sleeps: list[float]) -> None:
    script = Script(httpx.ReadError("connection reset"), consumed())
    with sync_client(script) as quota:
        assert quota.consume("user-1", {"tokens": 5}).allowed
    first, second = script.bodies()
    assert first == second and first["idempotency_key"].startswith("sdk_")


def test_a_lost_answer_of_a_call_unsafe_to_repeat_is_raised(sleeps: list[float]) -> None:
    script = Script(httpx.ReadError("connection reset"))
    with sync_client(script) as quota, pytest.raises(APIConnectionError):
        quota.create_resource(name="tokens")
    assert len(script.requests) == 1
    # A request that never left is safe to send again, whatever it is.
    at = "2026-01-01T00:00:00Z"
    created = {"id": "res_1", "name": "tokens", "description": "", "unit": "units"}
    created |= {"created_at": at, "updated_at": at}
    script = Script(httpx.ConnectError("refused"), httpx.Response(201, json=created))
    with sync_client(script) as quota:
        assert quota.create_resource(name="tokens").id == "res_1"
    assert len(script.requests) == 2


def test_a_probe_answers_its_503_without_retrying(sleeps: list[float]) -> None:
    script = Script(httpx.Response(503, json={"down": "redis"}))
    with sync_client(script) as quota:
        assert quota.readyz() == {"down": "redis"}
    assert len(script.requests) == 1 and sleeps == []


def test_exact_integers_both_ways() -> None:
    script = Script(consumed())
    with sync_client(script) as quota:
        answer = quota.consume("user-1", {"tokens": 2**53 - 1})
    assert b'"amount":9007199254740991' in script.requests[0].content
    assert answer.results[0].used == BIG - 1 and isinstance(answer.results[0].used, int)


def test_path_parameters_are_escaped() -> None:
    script = Script(httpx.Response(204))
    with sync_client(script) as quota:
        quota.delete_assignment("team/a b?c#d%")
    assert script.requests[0].url.raw_path == b"/v1/subjects/team%2Fa%20b%3Fc%23d%25/assignment"
    assert script.requests[0].headers["authorization"] == "Bearer qk_test_secret"


@pytest.mark.anyio
async def test_the_async_client_retries_alike(sleeps: list[float]) -> None:
    script = Script(
        httpx.ReadError("connection reset"),
        refusal(503, "service_unavailable", **{"Retry-After": "1"}),
        consumed(),
    )
    async with async_client(script) as quota:
        answer = await quota.consume("user-1", {"tokens": 5})
    assert answer.results[0].limit == BIG
    assert len(script.requests) == 3 and sleeps[1] == 1.0
    assert len({body["idempotency_key"] for body in script.bodies()}) == 1

    script = Script(refusal(429, "rate_limited", **{"Retry-After": "0"}))
    async with async_client(script, max_retries=0) as quota:
        with pytest.raises(RateLimitError):
            await quota.check("user-1", {"tokens": 5})
