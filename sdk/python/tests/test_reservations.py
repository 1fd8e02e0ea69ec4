"""The reservation context manager, sync and async, checked by reading each reservation back."""

from __future__ import annotations

import pytest
from conftest import assigned_subject, make_plan

from quota_client import AsyncClient, Client, ReservationDenied


class Boom(Exception):
    pass


def test_a_clean_exit_commits_the_held_amounts(client: Client) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    with client.reservation(subject, {plan.resource: 40}, ttl_seconds=60) as held:
        assert client.get_reservation(held.id).status == "held"
        assert client.get_subject_usage(subject).usage[0].used == 40
    assert held.committed is not None and held.committed.status == "committed"
    read = client.get_reservation(held.id)
    assert read.status == "committed"
    assert read.adjustments is not None
    assert [(a.held, a.actual, a.delta) for a in read.adjustments] == [(40, 40, 0)]
    assert client.get_subject_usage(subject).usage[0].used == 40


def test_a_clean_exit_commits_the_actuals_the_body_set(client: Client) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    with client.reservation(subject, {plan.resource: 40}) as held:
        held.actuals[plan.resource] = 15
    read = client.get_reservation(held.id)
    assert read.status == "committed"
    assert read.adjustments is not None
    assert [(a.held, a.actual, a.delta) for a in read.adjustments] == [(40, 15, -25)]
    assert client.get_subject_usage(subject).usage[0].used == 15


def test_an_exception_releases_and_goes_on(client: Client) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    with pytest.raises(Boom), client.reservation(subject, {plan.resource: 40}) as held:
        raise Boom()
    assert held.released is not None and held.committed is None
    assert client.get_reservation(held.id).status == "released"
    assert client.get_subject_usage(subject).usage[0].used == 0


def test_a_denied_reservation_raises_and_holds_nothing(client: Client) -> None:
    plan = make_plan(client, limit=10)
    subject = assigned_subject(client, plan)
    ran = False
    with pytest.raises(ReservationDenied) as denied:
        with client.reservation(subject, {plan.resource: 11}):
            ran = True
    assert not ran and not denied.value.response.allowed
    assert denied.value.response.reservation_id is None
    assert client.get_subject_usage(subject).usage[0].used == 0


def test_the_body_may_settle_it_itself(client: Client) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    with client.reservation(subject, {plan.resource: 40}) as held:
        held.release()
    assert client.get_reservation(held.id).status == "released" and held.committed is None
    with client.reservation(subject, {plan.resource: 40}) as again:
        again.commit({plan.resource: 1})
    assert client.get_reservation(again.id).status == "committed"
    assert client.get_subject_usage(subject).usage[0].used == 1


def test_reserve_commit_release_methods(client: Client) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    reserved = client.reserve(subject, {plan.resource: 20}, ttl_seconds=30)
    assert reserved.allowed and reserved.status == "held" and reserved.reservation_id
    committed = client.commit_reservation(
        reserved.reservation_id, actuals=[{"resource": plan.resource, "amount": 25}]
    )
    assert committed.adjustments[0].delta == 5
    other = client.reserve(subject, {plan.resource: 20})
    assert other.reservation_id
    released = client.release_reservation(other.reservation_id)
    assert released.status == "released" and released.released[0].amount == 20
    assert client.release_reservation(other.reservation_id).status == "released"  # idempotent
    assert client.get_subject_usage(subject).usage[0].used == 25


@pytest.mark.anyio
async def test_async_reservation_commits_and_releases(aclient: AsyncClient, client: Client) -> None:
    plan = make_plan(client, limit=100)
    subject = assigned_subject(client, plan)
    async with aclient.reservation(subject, {plan.resource: 30}) as held:
        held.actuals[plan.resource] = 12
    assert (await aclient.get_reservation(held.id)).status == "committed"
    with pytest.raises(Boom):
        async with aclient.reservation(subject, {plan.resource: 30}) as failed:
            raise Boom()
    assert (await aclient.get_reservation(failed.id)).status == "released"
    assert (await aclient.get_subject_usage(subject)).usage[0].used == 12
