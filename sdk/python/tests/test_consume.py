"""Consumption against the live service: decisions, idempotency, exact integers."""

from __future__ import annotations

from typing import Any

import httpx
from conftest import assigned_subject, make_plan, unique

from quota_client import Client


class LoseFirstAnswer(httpx.BaseTransport):
    """Sends every request to the service, but loses the answer of the first consume: the
    service decided it, the client never hears (a connection reset after the request)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path == "/v1/consume":
            self.sent.append(request.read())
            if len(self.sent) == 1:
                response.read()
                response.close()
                raise httpx.ReadError("connection reset after the request", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def test_consume_check_refund(client: Client) -> None:
    plan = make_plan(client, limit=10)
    subject = assigned_subject(client, plan)
    checked = client.check(subject, {plan.resource: 10})
    assert checked.allowed and checked.blocking is None
    consumed = client.consume(
        subject, [{"resource": plan.resource, "amount": 7}], metadata={"job": "a"}
    )
    assert consumed.allowed and consumed.results[0].used == 7 and consumed.results[0].remaining == 3
    denied = client.consume(subject, {plan.resource: 4})
    assert not denied.allowed and denied.results[0].retry_after_seconds is None  # lifetime
    refunded = client.refund(subject, {plan.resource: 2})
    assert refunded.event_id
    assert client.get_subject_usage(subject).usage[0].used == 5


def test_a_retried_consume_consumes_once(tenant: Any, base_url: str) -> None:
    transport = LoseFirstAnswer()
    http = httpx.Client(transport=transport)
    with Client(tenant.key, base_url=base_url, http_client=http) as quota:
        plan = make_plan(quota, limit=100)
        subject = assigned_subject(quota, plan)
        answer = quota.consume(subject, {plan.resource: 30})
        assert answer.allowed
        # Sent twice, byte for byte (the same generated idempotency_key), decided once.
        assert len(transport.sent) == 2 and transport.sent[0] == transport.sent[1]
        assert answer.results[0].used == 30
        assert quota.get_subject_usage(subject).usage[0].used == 30
        entries = list(quota.iter_ledger(subject=subject))
        assert [(e.entry_type, e.amount) for e in entries] == [("consume", 30)]
        assert entries[0].event_id == answer.event_id and entries[0].idempotency_key is not None
    http.close()


def test_a_callers_idempotency_key_replays_the_first_answer(client: Client) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    key = unique("order")
    first = client.consume(subject, {plan.resource: 10}, idempotency_key=key)
    again = client.consume(subject, {plan.resource: 10}, idempotency_key=key)
    assert again.event_id == first.event_id
    assert client.get_subject_usage(subject).usage[0].used == 10


def test_counters_past_2_53_are_exact(client: Client) -> None:
    largest = 2**53 - 1
    plan = make_plan(client, limit=largest, on_exceed="allow_overage")
    subject = assigned_subject(client, plan)
    assert client.consume(subject, {plan.resource: largest}).results[0].remaining == 0
    past = client.consume(subject, {plan.resource: 10})
    assert past.allowed and past.results[0].used == 2**53 + 9 and past.results[0].overage == 10
    assert client.get_subject_usage(subject).usage[0].used == 2**53 + 9


def test_fast_mode_and_subjects_with_any_characters(client: Client) -> None:
    plan = make_plan(client, limit=5, enforcement_mode="fast")
    subject = f"{unique('team')}/a b?c#%é"
    client.put_assignment(subject, plan_id=plan.plan_id)
    assert client.get_assignment(subject).subject == subject
    assert client.consume(subject, {plan.resource: 5}).allowed
    assert not client.consume(subject, {plan.resource: 1}).allowed
    entitlements = client.get_subject_entitlements(subject)
    assert entitlements.subject == subject and entitlements.policies[0].policy_id == plan.policy_id
