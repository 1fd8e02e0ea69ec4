"""Argument types: a nested input may be given as its model (quota_client.models) or as a dict
of the same fields; these TypedDicts type the dicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from typing_extensions import NotRequired

from .models import (
    ActualItem,
    AlertChannelsIn,
    CodecPayload,
    ConsumeItem,
    KeyConstraintsIn,
    OverrideItem,
)

__all__ = [
    "ActualItemParam",
    "ActualsParam",
    "AlertChannelsParam",
    "CodecPayloadParam",
    "ItemsParam",
    "KeyConstraintsParam",
    "OverrideItemParam",
    "PayloadsParam",
    "Scope",
]


class ConsumeItemParam(TypedDict):
    resource: str
    amount: int


class ActualItemParam(TypedDict):
    resource: str
    amount: int


class OverrideItemParam(TypedDict):
    policy_id: str
    limit_amount: NotRequired[int | None]
    enabled: NotRequired[bool]


class KeyConstraintsParam(TypedDict, total=False):
    plan_ids: list[str] | None
    subject_prefix: str | None
    catalog_name_prefix: str | None


class AlertChannelsParam(TypedDict, total=False):
    webhooks: list[str]
    emails: list[str]


class CodecPayloadParam(TypedDict, total=False):
    metadata: Mapping[str, str]
    data: str


ItemsParam = Mapping[str, int] | Sequence[ConsumeItem | ConsumeItemParam]
"""Items to consume, check, refund or reserve: a list of {resource, amount}, or the shorthand
{resource: amount} (items naming one resource are summed by the service anyway)."""

ActualsParam = Mapping[str, int] | Sequence[ActualItem | ActualItemParam]
"""A commit's actuals: a list of {resource, amount}, or the shorthand {resource: amount}."""

OverridesParam = Sequence[OverrideItem | OverrideItemParam]
ConstraintsParam = KeyConstraintsIn | KeyConstraintsParam
ChannelsParam = AlertChannelsIn | AlertChannelsParam

PayloadsParam = Sequence[CodecPayload | CodecPayloadParam]
"""Temporal payloads in the remote codec's JSON (protobuf JSON: metadata values and data in
base64), as models or dicts."""

Scope = Literal[
    "keys:read",
    "keys:write",
    "catalog:read",
    "catalog:write",
    "assignments:read",
    "assignments:write",
    "usage:read",
    "consume",
    "check",
    "audit:read",
    "alerts:read",
    "alerts:write",
    "webhooks:read",
    "webhooks:write",
]
