"""The frozen value objects the client returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .models import Status

__all__ = [
    "CancelResult",
    "InstanceStatus",
    "JournalEntry",
    "PurgeResult",
    "SignalResult",
    "StartResult",
    "Status",
    "StepLog",
    "UpdateResult",
    "Wait",
    "WaitOutcome",
]


@dataclass(frozen=True)
class StartResult:
    id: str
    workflow: str
    version: int
    created: bool
    status: Status
    # A start with a debounce that found the instance still waiting to begin, and moved it.
    debounced: bool = False


@dataclass(frozen=True)
class SignalResult:
    signal_id: int
    created: bool
    woken: int
    key: str | None


@dataclass(frozen=True)
class Wait:
    signal: str
    key: str | None


@dataclass(frozen=True)
class StepLog:
    """A line a step logged with step.log during its attempt: when, at which level name
    ("INFO"), and the message with its arguments merged."""

    at: datetime
    level: str
    message: str


@dataclass(frozen=True)
class JournalEntry:
    name: str
    kind: str
    status: str
    attempt: int | None
    result: Any
    # A failed attempt's error: name, message and traceback (the formatted traceback).
    error: dict[str, Any] | None
    started_at: datetime | None
    finished_at: datetime | None
    # The lines the entry's latest attempt logged with step.log (bounded), and how many more
    # it logged than were kept.
    logs: list[StepLog] = field(default_factory=list)
    logs_dropped: int = 0


@dataclass(frozen=True)
class InstanceStatus:
    id: str
    workflow: str
    version: int
    status: str
    input: Any
    output: Any
    error: dict[str, Any] | None
    custom_status: Any
    wake_at: datetime | None
    deadline: datetime | None
    priority: int | None
    parent_id: str | None
    schedule_id: str | None
    scheduled_at: datetime | None
    runs: int
    created_at: datetime
    updated_at: datetime
    lease_owner: str | None
    cancel_requested: bool
    terminate_requested: bool
    waits: list[Wait]
    journal: list[JournalEntry] | None
    children: list[InstanceStatus] | None
    # The values published with ctx.set_value(): each name's latest value.
    values: dict[str, Any] = field(default_factory=dict)
    # How often it continued as new (ctx.continue_as_new()): 0 for an instance that never did.
    generation: int = 0
    # The instance it was forked from (django_workflows.fork()), else None.
    forked_from: str | None = None
    # The model instance it is about (start(subject=...)), "app_label.model:pk", else None.
    subject: str | None = None
    # Its tags, sorted, and its search attributes (name to value, a datetime aware in UTC).
    tags: list[str] = field(default_factory=list)
    attributes: dict[str, Any] = field(default_factory=dict)
    # The queue it waits in (@workflow(queue=...), start(queue=...)).
    queue: str = "default"
    # The key it shares the workers with (@workflow(fair_key=...), start(fair_key=...)).
    fair_key: str | None = None
    # Its streams (ctx.stream(), step.stream()): name to {"items": n, "closed": bool}.
    streams: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamItem:
    """One item of a stream, as read_stream() yields it: its offset (1, 2, ...), its value, the
    step attempt that wrote it (None for ctx.stream()) and when it was written."""

    offset: int
    value: Any
    attempt: int | None
    at: datetime


@dataclass(frozen=True)
class CancelResult:
    accepted: bool
    instance: InstanceStatus | None


@dataclass(frozen=True)
class UpdateResult:
    """What update() returns: whether the update was stored for the instance's
    wait_for_update(), the validator's reason when it was refused, and the instance."""

    accepted: bool
    reason: str | None
    instance: InstanceStatus | None


@dataclass(frozen=True)
class PurgeResult:
    instances: int
    signals: int
    rate_limits: int
    workers: int = 0  # registry rows of worker processes gone for more than a day


@dataclass(frozen=True)
class WaitOutcome:
    """What wait_for_any() returns: the key of the condition that happened first, and its value."""

    key: str
    value: Any
