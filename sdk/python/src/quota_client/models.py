# Generated from the quota service's OpenAPI document by datamodel-code-generator
# (sdk/python/tools/generate.py): do not edit; regenerate.

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from typing_extensions import TypeAliasType


class ActualItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    resource: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")]
    amount: Annotated[int, Field(ge=0, le=9007199254740991)]


class AdjustmentOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    resource: Annotated[str, Field(min_length=1)]
    held: int
    """
    an exact integer, past 2^53 too
    """
    actual: int
    """
    an exact integer, past 2^53 too
    """
    delta: int
    """
    actual - held: what the commit added to (or gave back from) usage
    """
    overage: Annotated[int, Field(ge=0)]
    """
    how far the commit's extra went past a limit
    """


class AlertChannels(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    webhooks: list[Webhook]
    """
    webhook endpoint ids
    """
    emails: list[Email]
    """
    e-mail addresses
    """


class AlertChannelsIn(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    webhooks: Annotated[list[Webhook1], Field(max_length=20)] = []
    """
    ids of the tenant’s webhook endpoints (422 reference_not_found otherwise)
    """
    emails: Annotated[list[Email1], Field(max_length=10)] = []
    """
    addresses mailed each unsuppressed event of the rule (plain text, one mail per address, through the SMTP server the deployment configures)
    """


class AlertEventOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    rule_id: Annotated[str, Field(min_length=1)]
    subject: Annotated[str, Field(min_length=1)]
    policy_id: Annotated[str, Field(min_length=1)]
    window_id: Annotated[str, Field(min_length=1)]
    """
    the window's counter key (lifetime, or its start)
    """
    threshold_pct: int
    usage_pct: float
    """
    usage × 100 / limit when it crossed, 2 decimals
    """
    suppressed: bool
    """
    within the rule's cooldown: recorded, not notified
    """
    triggered_at: datetime


class AlertRuleCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")]
    policy_id: Annotated[
        str | None, Field(max_length=100, min_length=1, pattern="^[^\\u0000]*$")
    ] = None
    """
    one policy; null: every policy
    """
    resource_id: Annotated[
        str | None, Field(max_length=100, min_length=1, pattern="^[^\\u0000]*$")
    ] = None
    """
    the resource's policies; null: any resource
    """
    subject_filter: Annotated[
        str | None,
        Field(max_length=256, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f{}]*$"),
    ] = None
    """
    a subject, exactly; ending in * a prefix (acme:* matches acme:1); null: every subject
    """
    threshold_pct: Annotated[int, Field(ge=1, le=1000)]
    """
    percent of the window's limit
    """
    channels: AlertChannelsIn
    cooldown_seconds: Annotated[int, Field(ge=0, le=604800)] = 0
    """
    after an event, crossings within this many seconds are recorded suppressed
    """
    enabled: bool = True


class AlertRuleOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    policy_id: Annotated[str | None, Field(min_length=1)]
    resource_id: Annotated[str | None, Field(min_length=1)]
    subject_filter: Annotated[str | None, Field(min_length=1)]
    threshold_pct: int
    channels: AlertChannels
    cooldown_seconds: int
    enabled: bool
    created_at: datetime


class AlertRulePatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")] = None
    threshold_pct: Annotated[int | None, Field(ge=1, le=1000)] = None
    channels: AlertChannelsIn | None = None
    cooldown_seconds: Annotated[int | None, Field(ge=0, le=604800)] = None
    enabled: bool | None = None


class ApiKeyCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(max_length=200, pattern="^[^\\u0000]*$")] = ""
    scopes: Annotated[
        list[
            Literal[
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
        ],
        Field(min_length=1),
    ]
    actor: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")]
    constraints: KeyConstraintsIn | None = None


class ApiKeyMinted(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    """
    the key row id (paths); never changes
    """
    key_id: Annotated[str, Field(min_length=1)]
    """
    the secret's public half; changes on rotate
    """
    name: str
    scopes: list[
        Literal[
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
    ]
    actor: Annotated[str, Field(min_length=1)]
    status: Literal["active", "revoked"]
    constraints: KeyConstraints | None
    created_by_actor: Annotated[str | None, Field(min_length=1)]
    """
    the issuer, when the key was minted for another actor
    """
    created_at: datetime
    last_used_at: datetime | None
    """
    written in batches: at most 10 s behind the last request
    """
    key: Annotated[str, Field(min_length=1)]
    """
    the secret: shown here once, never again
    """


class ApiKeyOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    """
    the key row id (paths); never changes
    """
    key_id: Annotated[str, Field(min_length=1)]
    """
    the secret's public half; changes on rotate
    """
    name: str
    scopes: list[
        Literal[
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
    ]
    actor: Annotated[str, Field(min_length=1)]
    status: Literal["active", "revoked"]
    constraints: KeyConstraints | None
    created_by_actor: Annotated[str | None, Field(min_length=1)]
    """
    the issuer, when the key was minted for another actor
    """
    created_at: datetime
    last_used_at: datetime | None
    """
    written in batches: at most 10 s behind the last request
    """


class ApiKeyPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str | None, Field(max_length=200, pattern="^[^\\u0000]*$")] = None
    constraints: KeyConstraintsIn | None = None


class AssignmentOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    subject: Annotated[str, Field(min_length=1)]
    plan_id: Annotated[str, Field(min_length=1)]
    plan_name: Annotated[str, Field(min_length=1)]
    created_at: datetime


class AssignmentPut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    plan_id: Annotated[str, Field(max_length=100, min_length=1, pattern="^[^\\u0000]*$")]


class AuditEntry(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    seq: Annotated[int, Field(ge=1)]
    """
    increases with every entry of the service
    """
    actor: Annotated[str, Field(min_length=1)]
    """
    the acting key's actor
    """
    action: Annotated[str, Field(min_length=1)]
    """
    <entity>.<verb>: tenant.create, api_key.rotate, policy.update, ...
    """
    entity_type: Annotated[str, Field(min_length=1)]
    entity_id: Annotated[str | None, Field(min_length=1)]
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    at: datetime


class AuditPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entries: list[AuditEntry]
    next_cursor: Annotated[str | None, Field(min_length=1)]


class Bootstrap(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    state: Literal["pending", "running", "done", "failed"]
    """
    the initial grants (workflow quota-bootstrap/<tenant id>)
    """
    attempts: Annotated[int, Field(ge=0)]
    error: Annotated[str | None, Field(min_length=1)]


BucketCapacity = TypeAliasType("BucketCapacity", Annotated[int, Field(ge=1, le=9007199254740991)])


class CheckRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    subject: Annotated[
        str,
        Field(max_length=256, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f{}]*$"),
    ]
    items: Annotated[list[ConsumeItem], Field(max_length=50, min_length=1)]


class CheckResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    allowed: bool
    degraded: bool
    results: list[PolicyUsageOut]
    blocking: PolicyUsageOut | None


class CodecPayload(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    metadata: dict[Annotated[str, StringConstraints(pattern=r"^[\s\S]{1,256}$")], str] = {}
    """
    metadata values in base64 (e.g. `encoding`)
    """
    data: Annotated[str, Field(pattern="^[A-Za-z0-9+/]*={0,2}$")] = ""
    """
    the payload bytes in base64
    """


class CodecPayloads(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    payloads: Annotated[list[CodecPayload], Field(max_length=1000)]


class CommitRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    actuals: Annotated[list[ActualItem], Field(max_length=50, validate_default=True)] = []
    idempotency_key: Annotated[
        str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")
    ] = None


class CommitResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    reservation_id: Annotated[str, Field(min_length=1)]
    status: Literal["committed"]
    event_id: Annotated[str, Field(min_length=1)]
    degraded: bool
    adjustments: list[AdjustmentOut]


class ConsumeItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    resource: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")]
    amount: Annotated[int, Field(ge=1, le=9007199254740991)]


class ConsumeRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    subject: Annotated[
        str,
        Field(max_length=256, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f{}]*$"),
    ]
    items: Annotated[list[ConsumeItem], Field(max_length=50, min_length=1)]
    idempotency_key: Annotated[
        str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")
    ] = None
    metadata: Annotated[dict[str, Any], Field(max_length=64)] = {}


class ConsumeResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    allowed: bool
    event_id: Annotated[str, Field(min_length=1)]
    """
    the ledger event; its entries carry it (a denial writes none)
    """
    degraded: bool
    results: list[PolicyUsageOut]


class DeliveryOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    endpoint_id: Annotated[str, Field(min_length=1)]
    alert_event_id: Annotated[str | None, Field(min_length=1)]
    event_type: Annotated[str, Field(min_length=1)]
    attempt_count: Annotated[int, Field(ge=0)]
    status: Literal["pending", "delivering", "retrying", "delivered", "dead", "cancelled"]
    """
    pending (not yet attempted), delivering (an attempt in flight), retrying (waiting for next_attempt_at), delivered, dead (every attempt failed, or a refusal no retry mends), cancelled (its endpoint was deleted)
    """
    last_status_code: int | None
    last_error: Annotated[str | None, Field(min_length=1)]
    next_attempt_at: datetime | None
    created_at: datetime


class EffectivePolicyOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    policy_id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    resource: Annotated[str, Field(min_length=1)]
    kind: Literal["quota", "rate_limit"]
    limit_amount: int | None
    window_kind: Literal["fixed", "rolling", "lifetime"] | None
    window_unit: Literal["minute", "hour", "day", "week", "month"] | None
    window_size: int | None
    tz: Annotated[str | None, Field(min_length=1)]
    bucket_capacity: int | None
    refill_rate_per_sec: float | None
    enforcement_mode: Literal["strict", "fast"]
    on_exceed: Literal["block", "allow_overage"]
    on_backend_error: Literal["deny", "allow"] | None
    source: Literal["plan", "override"]
    """
    override: the subject has one for this policy
    """
    window: WindowOut | None


Email = TypeAliasType("Email", Annotated[str, Field(min_length=1)])


Email1 = TypeAliasType("Email1", Annotated[str, Field(max_length=254, min_length=1)])


class EntitlementsOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    subject: Annotated[str, Field(min_length=1)]
    policies: list[EffectivePolicyOut]


class Error(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    detail: Annotated[str, Field(min_length=1)]
    """
    the error code
    """


EventType = TypeAliasType("EventType", Annotated[str, Field(min_length=1)])


class HTTPValidationError(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    detail: list[ValidationError]


class JobList(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    jobs: list[JobStatus]
    runs: list[JobReport]
    """
    the latest runs, newest first
    """


class JobReport(BaseModel):
    """
    a job run; additional properties are the job's own figures (rows deleted, ...)
    """

    model_config = ConfigDict(
        extra="allow",
    )
    job: Annotated[str, Field(min_length=1)]
    ok: bool
    started_at: datetime
    finished_at: datetime
    trigger: Literal["schedule", "manual"] | None = None


class JobStatus(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(min_length=1)]
    description: Annotated[str, Field(min_length=1)]
    every_seconds: int
    budget_seconds: int
    last_success_at: datetime | None
    healthy: bool


class JobsHealth(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    healthy: bool
    jobs: list[JobStatus]


class KeyConstraints(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    plan_ids: list[PlanId] | None
    subject_prefix: Annotated[str | None, Field(min_length=1)]
    catalog_name_prefix: Annotated[str | None, Field(min_length=1)]


class KeyConstraintsIn(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    plan_ids: Annotated[list[PlanId1] | None, Field(min_length=1)] = None
    subject_prefix: Annotated[
        str | None,
        Field(max_length=128, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f{}]*$"),
    ] = None
    catalog_name_prefix: Annotated[
        str | None,
        Field(max_length=128, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f{}]*$"),
    ] = None


class LedgerEntry(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    """
    orders the ledger; pages follow it
    """
    event_id: Annotated[str, Field(min_length=1)]
    """
    the consume or commit answer that made it
    """
    subject: Annotated[str, Field(min_length=1)]
    resource: Annotated[str | None, Field(min_length=1)]
    amount: int
    """
    signed: consume +, refund -
    """
    entry_type: Literal["consume", "refund", "reserve", "commit", "release", "expire"]
    idempotency_key: Annotated[str | None, Field(min_length=1)]
    reservation_id: Annotated[str | None, Field(min_length=1)]
    strict_deferred: bool
    """
    written after the answer (the fast path's flush), not in its transaction
    """
    metadata: dict[str, Any] | None = None
    occurred_at: datetime


class LedgerPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entries: list[LedgerEntry]
    next_cursor: Annotated[str | None, Field(min_length=1)]


LimitAmount = TypeAliasType("LimitAmount", Annotated[int, Field(ge=1, le=9007199254740991)])


class OverrideItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    policy_id: Annotated[str, Field(max_length=100, min_length=1, pattern="^[^\\u0000]*$")]
    limit_amount: Annotated[int | None, Field(ge=1, le=9007199254740991)] = None
    enabled: bool = True


class OverrideOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    policy_id: Annotated[str, Field(min_length=1)]
    limit_amount_override: int | None
    enabled: bool


class OverridesPut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    overrides: Annotated[list[OverrideItem], Field(max_length=100)]


class PlanCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")]
    description: Annotated[str, Field(max_length=2000, pattern="^[^\\u0000]*$")] = ""
    policy_ids: Annotated[list[PolicyId1], Field(max_length=100)] = []


PlanId = TypeAliasType("PlanId", Annotated[str, Field(min_length=1)])


PlanId1 = TypeAliasType(
    "PlanId1",
    Annotated[str, Field(max_length=100, min_length=1, pattern="^[^\\u0000]*$")],
)


class PlanOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    description: str
    policy_ids: list[PolicyId]
    created_at: datetime
    updated_at: datetime


class PlanPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")] = None
    description: Annotated[str | None, Field(max_length=2000, pattern="^[^\\u0000]*$")] = None


class PlanPoliciesPut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    policy_ids: Annotated[list[PolicyId1], Field(max_length=100)]


class PolicyCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")]
    resource_id: Annotated[str, Field(max_length=100, min_length=1, pattern="^[^\\u0000]*$")]
    kind: Literal["quota", "rate_limit"]
    limit_amount: LimitAmount | None = None
    window_kind: Literal["fixed", "rolling", "lifetime"] | None = None
    window_unit: Literal["minute", "hour", "day", "week", "month"] | None = None
    window_size: WindowSize | None = None
    """
    default 1 for fixed and rolling windows
    """
    tz: Tz | None = None
    """
    an IANA time zone for fixed windows, spelled as the tz database spells it, case included (Europe/Berlin, Etc/UTC), kept as given; null: UTC
    """
    bucket_capacity: BucketCapacity | None = None
    refill_rate_per_sec: RefillRatePerSec | None = None
    enforcement_mode: Literal["strict", "fast"] = "fast"
    on_exceed: Literal["block", "allow_overage"] = "block"
    on_backend_error: Literal["deny", "allow"] | None = None
    """
    null: the mode's default (strict: deny, fast: allow)
    """
    enabled: bool = True


PolicyId = TypeAliasType("PolicyId", Annotated[str, Field(min_length=1)])


PolicyId1 = TypeAliasType(
    "PolicyId1",
    Annotated[str, Field(max_length=100, min_length=1, pattern="^[^\\u0000]*$")],
)


class PolicyOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    resource_id: Annotated[str, Field(min_length=1)]
    kind: Literal["quota", "rate_limit"]
    limit_amount: int | None
    window_kind: Literal["fixed", "rolling", "lifetime"] | None
    window_unit: Literal["minute", "hour", "day", "week", "month"] | None
    window_size: int | None
    tz: Annotated[str | None, Field(min_length=1)]
    bucket_capacity: int | None
    refill_rate_per_sec: float | None
    enforcement_mode: Literal["strict", "fast"]
    on_exceed: Literal["block", "allow_overage"]
    on_backend_error: Literal["deny", "allow"] | None
    enabled: bool
    created_at: datetime
    updated_at: datetime


class PolicyPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")] = None
    limit_amount: Annotated[int | None, Field(ge=1, le=9007199254740991)] = None
    bucket_capacity: Annotated[int | None, Field(ge=1, le=9007199254740991)] = None
    refill_rate_per_sec: Annotated[float | None, Field(gt=5e-07, lt=100000000000000.0)] = None
    on_exceed: Literal["block", "allow_overage"] | None = None
    on_backend_error: Literal["deny", "allow"] | None = None
    enabled: bool | None = None
    kind: Any | None = None
    resource_id: Any | None = None
    window_kind: Any | None = None
    window_unit: Any | None = None
    window_size: Any | None = None
    tz: Any | None = None
    enforcement_mode: Any | None = None


class PolicyUsageNow(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    policy_id: Annotated[str, Field(min_length=1)]
    policy_name: Annotated[str, Field(min_length=1)]
    resource: Annotated[str, Field(min_length=1)]
    kind: Literal["quota", "rate_limit"]
    enforcement_mode: Literal["strict", "fast"]
    source: Literal["plan", "override"]
    limit: int
    """
    an exact integer, past 2^53 too
    """
    used: int
    """
    an exact integer, past 2^53 too
    """
    remaining: int
    """
    an exact integer, past 2^53 too
    """
    window: WindowOut | None


class PolicyUsageOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    policy_id: Annotated[str, Field(min_length=1)]
    policy_name: Annotated[str, Field(min_length=1)]
    resource: Annotated[str, Field(min_length=1)]
    kind: Literal["quota", "rate_limit"]
    enforcement_mode: Literal["strict", "fast"]
    source: Literal["plan", "override"]
    allowed: bool
    requested: Annotated[int, Field(ge=0)]
    """
    this request's amount of the policy's resource
    """
    limit: int
    """
    a quota's limit or a rate limit's bucket capacity (an override's when set)
    """
    used: int
    """
    usage in the window after an admitted request (tokens spent for a rate limit)
    """
    remaining: int
    """
    an exact integer, past 2^53 too
    """
    overage: Annotated[int, Field(ge=0)]
    """
    how far past the limit allow_overage let this request go
    """
    window: WindowOut | None
    retry_after_seconds: int | None
    """
    denied: until the window resets or the bucket holds the amount; null when never
    """


class Probe(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    version: Annotated[str, Field(min_length=1)]
    """
    the platform's version (package.json's), the release this process runs
    """


RefillRatePerSec = TypeAliasType(
    "RefillRatePerSec", Annotated[float, Field(gt=5e-07, lt=100000000000000.0)]
)


class RefundRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    subject: Annotated[
        str,
        Field(max_length=256, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f{}]*$"),
    ]
    items: Annotated[list[ConsumeItem], Field(max_length=50, min_length=1)]
    idempotency_key: Annotated[
        str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")
    ] = None
    metadata: Annotated[dict[str, Any], Field(max_length=64)] = {}


class RefundResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    event_id: Annotated[str, Field(min_length=1)]
    degraded: bool


class ReleaseRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )


class ReleaseResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    reservation_id: Annotated[str, Field(min_length=1)]
    status: Literal["released"]
    event_id: Annotated[str | None, Field(min_length=1)]
    """
    the release event
    """
    released: list[ReservedItem]


class ReservationOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    reservation_id: Annotated[str, Field(min_length=1)]
    subject: Annotated[str, Field(min_length=1)]
    status: Literal["held", "committed", "released", "expired"]
    items: list[ReservedItem]
    expires_at: datetime
    event_id: Annotated[str, Field(min_length=1)]
    """
    the reserve event
    """
    settle_event_id: Annotated[str | None, Field(min_length=1)]
    """
    the commit, release or expire event
    """
    adjustments: list[AdjustmentOut] | None
    created_at: datetime
    settled_at: datetime | None


class ReserveRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    subject: Annotated[
        str,
        Field(max_length=256, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f{}]*$"),
    ]
    items: Annotated[list[ConsumeItem], Field(max_length=50, min_length=1)]
    idempotency_key: Annotated[
        str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")
    ] = None
    metadata: Annotated[dict[str, Any], Field(max_length=64)] = {}
    ttl_seconds: Annotated[int, Field(ge=1, le=86400)] = 300


class ReserveResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    allowed: bool
    reservation_id: Annotated[str | None, Field(min_length=1)]
    """
    null when denied (nothing held)
    """
    status: Literal["held"] | None
    expires_at: datetime | None
    event_id: Annotated[str, Field(min_length=1)]
    degraded: bool
    results: list[PolicyUsageOut]


class ReservedItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    resource: Annotated[str, Field(min_length=1)]
    amount: Annotated[int, Field(ge=1)]
    """
    an exact integer, past 2^53 too
    """


class ResourceCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")]
    description: Annotated[str, Field(max_length=2000, pattern="^[^\\u0000]*$")] = ""
    unit: Annotated[
        str, Field(max_length=64, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f]*$")
    ] = "units"


class ResourceOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    description: str
    unit: Annotated[str, Field(min_length=1)]
    created_at: datetime
    updated_at: datetime


class ResourcePatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")] = None
    description: Annotated[str | None, Field(max_length=2000, pattern="^[^\\u0000]*$")] = None
    unit: Annotated[
        str | None,
        Field(max_length=64, min_length=1, pattern="^[^\\u0000-\\u001f\\u007f]*$"),
    ] = None


class SubjectUsageOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    subject: Annotated[str, Field(min_length=1)]
    plan_id: Annotated[str | None, Field(min_length=1)]
    plan_name: Annotated[str | None, Field(min_length=1)]
    usage: list[PolicyUsageNow]


class SummaryRow(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    granularity: Literal["hour", "day"]
    start: datetime
    """
    a UTC hour or day
    """
    end: datetime
    subject: Annotated[str, Field(min_length=1)]
    resource: Annotated[str | None, Field(min_length=1)]
    consumed: Annotated[int, Field(ge=0)]
    """
    positive entries: consumed (and committed)
    """
    refunded: Annotated[int, Field(ge=0)]
    """
    negative entries, as a positive amount
    """
    net: int
    """
    consumed - refunded
    """
    entries: Annotated[int, Field(ge=0)]


class TenantCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")]
    admin_actor: Annotated[
        str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")
    ] = None
    """
    the first key's actor; default: the operator key's
    """


class TenantCreated(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    status: Literal["active", "suspended"]
    bootstrap: Bootstrap
    created_at: datetime
    updated_at: datetime
    suspended_at: datetime | None
    admin_key: ApiKeyMinted


class TenantOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    status: Literal["active", "suspended"]
    bootstrap: Bootstrap
    created_at: datetime
    updated_at: datetime
    suspended_at: datetime | None


class TenantPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str | None, Field(max_length=200, min_length=1, pattern="^[^\\u0000]*$")] = None
    status: Literal["active", "suspended"] | None = None


Tz = TypeAliasType("Tz", Annotated[str, Field(max_length=64, min_length=1)])
"""
an IANA time zone
"""


class ValidationError(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    loc: list[str | int]
    msg: Annotated[str, Field(min_length=1)]
    type: Annotated[str, Field(min_length=1)]


Webhook = TypeAliasType("Webhook", Annotated[str, Field(min_length=1)])


Webhook1 = TypeAliasType(
    "Webhook1",
    Annotated[str, Field(max_length=100, min_length=1, pattern="^[^\\u0000]*$")],
)


class WebhookEndpointCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    url: Annotated[
        str,
        Field(
            max_length=2048,
            min_length=1,
            pattern="^[Hh][Tt][Tt][Pp][Ss]://[^\\u0000-\\u0020\\u007f/?#@\\\\]+(?:[/?#][^\\u0000-\\u0020\\u007f]*)?$",
        ),
    ]
    description: Annotated[str, Field(max_length=2000, pattern="^[^\\u0000]*$")] = ""
    event_types: Annotated[list[Literal["alert.triggered"]], Field(min_length=1)] = [
        "alert.triggered"
    ]
    enabled: bool = True


class WebhookEndpointCreated(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    url: Annotated[str, Field(min_length=1)]
    """
    https; private and loopback targets are refused at send
    """
    description: str
    event_types: list[EventType]
    """
    what it receives (alert.triggered)
    """
    enabled: bool
    """
    false: nothing is delivered to it
    """
    created_at: datetime
    updated_at: datetime
    secret: Annotated[str, Field(min_length=1)]
    """
    The Standard Webhooks signing secret (whsec_<base64>), shown in this answer only
    """


class WebhookEndpointOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(min_length=1)]
    url: Annotated[str, Field(min_length=1)]
    """
    https; private and loopback targets are refused at send
    """
    description: str
    event_types: list[EventType]
    """
    what it receives (alert.triggered)
    """
    enabled: bool
    """
    false: nothing is delivered to it
    """
    created_at: datetime
    updated_at: datetime


class WebhookEndpointPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    url: Annotated[
        str | None,
        Field(
            max_length=2048,
            min_length=1,
            pattern="^[Hh][Tt][Tt][Pp][Ss]://[^\\u0000-\\u0020\\u007f/?#@\\\\]+(?:[/?#][^\\u0000-\\u0020\\u007f]*)?$",
        ),
    ] = None
    description: Annotated[str | None, Field(max_length=2000, pattern="^[^\\u0000]*$")] = None
    event_types: Annotated[list[Literal["alert.triggered"]] | None, Field(min_length=1)] = None
    enabled: bool | None = None


class WebhookTestResult(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    delivery_id: Annotated[str, Field(min_length=1)]
    """
    the test delivery, listed by GET /v1/webhook-deliveries
    """
    delivered: bool
    """
    the receiver answered 2xx
    """
    status_code: int | None
    """
    the receiver's HTTP status
    """
    latency_ms: Annotated[int, Field(ge=0)]
    """
    from the DNS lookup to the answer read
    """
    error: Annotated[str | None, Field(min_length=1)]
    """
    why it was not delivered
    """


class WindowOut(BaseModel):
    """
    null for a rate limit
    """

    model_config = ConfigDict(
        extra="allow",
    )
    kind: Literal["fixed", "rolling", "lifetime"]
    unit: Literal["minute", "hour", "day", "week", "month"] | None
    size: int | None
    tz: Annotated[str | None, Field(min_length=1)]
    """
    a fixed window's zone
    """
    start: datetime | None
    """
    null for lifetime; a rolling window slides
    """
    end: datetime | None
    """
    exclusive; null for lifetime
    """
    resets_at: datetime | None
    """
    a fixed window's end; null otherwise
    """


WindowSize = TypeAliasType("WindowSize", Annotated[int, Field(ge=1, le=2147483647)])
"""
default 1 for fixed and rolling windows
"""


class WorkerHealth(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    status: Literal["ok", "lagging"]
    oldest_wait_seconds: Annotated[float | None, Field(ge=0.0)]
    """
    null: Redis did not answer
    """
    budget_seconds: Annotated[int, Field(ge=1)]
