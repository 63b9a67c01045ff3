"""Signals, and every message addressed to a wait: recorded under the signal lock, deduplicated
by (name, dedupe id), waking the instances that wait for them.

A message addressed to a wait is always a signal. `signal()` records one under the name the
workflow waits for; the engine records its own under the reserved names below, and the wait
(engine/waits.py) takes them all the same way:

- an update, `update(id, name, arg)`: "$update:<name>", keyed by the instance id;
- a webhook's delivery (client/webhooks.py): "$webhook", keyed by the token's key;
- a breakpoint's resume (`resume()`): "$breakpoint", keyed by the instance id;
- an external task's outcome (`complete_task()`, `fail_task()`): "$task", keyed by the id;
- a child's end, for its parent: "$child", keyed by the child's id.

A breakpoint's resume and a task's outcome answer one place in one instance: they are
recorded only while that place waits (lock_pending(), then record_answer()).
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Min, Q

from ..models import FINISHED, JournalEntry, Signal, WorkflowInstance
from . import payloads
from .backends import backend
from .backends.base import signal_id_conflict
from .deadlocks import retries_deadlocks

UPDATE_PREFIX = "$update:"  # an update's signal: "$update:<name>"
WEBHOOK_SIGNAL = "$webhook"
BREAKPOINT_SIGNAL = "$breakpoint"  # payload {"name", "at", "generation"}
TASK_SIGNAL = "$task"  # payload {"task", "attempt", "at", "generation", ...}
CHILD_SIGNAL = "$child"  # payload {"status", "output", "error"}


@dataclass(frozen=True)
class RecordedSignal:
    id: int
    woken: int
    created: bool
    key: str | None


@retries_deadlocks
def record_signal(
    using: str,
    *,
    name: str,
    key: str | None,
    dedupe_id: str | None,
    payload: Any,
    now: datetime,
    locked: bool = False,
) -> RecordedSignal:
    """Store a signal under the next id and make due every suspended instance waiting for it.

    Joins the caller's transaction. The exclusive signal lock, held until commit, orders it
    with every other signal and with suspensions, which makes the dedupe lookup below safe.
    """
    with transaction.atomic(using=using, savepoint=False):
        if not locked:
            backend(using).lock_signals(shared=False)
        return RecordedSignal(
            *backend(using).record_signal(
                name=name, key=key, dedupe_id=dedupe_id, payload=payload, now=now
            )
        )


@retries_deadlocks
def signal_by_routine(
    using: str, *, name: str, key: str | None, dedupe_id: str | None, payload: Any, now: datetime
) -> RecordedSignal | None:
    """record_signal() in the one call of the database's own routine that also wakes the
    workers of other processes (Backend.signal_by_routine): outside any transaction, or in the
    caller's where the routine does not commit (PostgreSQL's). None where it has none it can
    call there, or for a payload a codec seals (bound to the row's id, which only the INSERT
    gives)."""
    if payloads.seals_signal(payload):
        return None
    found = backend(using).signal_by_routine(
        name=name, key=key, dedupe_id=dedupe_id, payload=payload, now=now
    )
    if found is None:
        return None
    recorded = RecordedSignal(*found)
    if not recorded.created and recorded.key != key:
        raise signal_id_conflict(name, dedupe_id, recorded.key, key)
    return recorded


def signals_for(
    using: str, *, name: str, key: str | None, after_id: int, up_to_id: int
) -> list[Signal]:
    """Signals named `name` with exactly `key` and after_id < id <= up_to_id, by id."""
    rows = Signal.objects.using(using).filter(name=name, id__gt=after_id, id__lte=up_to_id)
    rows = rows.filter(key=key) if key is not None else rows.filter(key__isnull=True)
    return [payloads.decode_signal(signal) for signal in rows.order_by("id")]


def recorded_before(
    using: str, *, waits: list[tuple[str, str | None]], after_id: int, deadline: datetime
) -> list[Signal]:
    """Signals for any of `waits` (name, key) with an id above `after_id`, recorded before or
    at `deadline`, by id: what a wait that its timer is about to decide must take first.

    Read under the signal lock, shared: a signal whose record holds the lock exclusively is
    waited for, and one recorded after the read starts is recorded after `deadline` (the
    caller reads once its clock is past it), so no signal recorded in time is left unseen."""
    matches = functools.reduce(
        operator.or_,
        (
            Q(name=name, key=key) if key is not None else Q(name=name, key__isnull=True)
            for name, key in waits
        ),
    )
    with transaction.atomic(using=using):
        backend(using).lock_signals(shared=True)
        rows = Signal.objects.using(using).filter(
            matches, id__gt=after_id, created_at__lte=deadline
        )
        return [payloads.decode_signal(signal) for signal in rows.order_by("id")]


def first_unconsumed(using: str, *, after_id: int, up_to_id: int, consumed: set[int]) -> int | None:
    """The lowest signal id in (after_id, up_to_id] that is not in `consumed`, or None: how far
    an instance's signal cursor can move past the signals it took (ctx.continue_as_new())."""
    rows = Signal.objects.using(using).filter(id__gt=after_id, id__lte=up_to_id)
    return rows.exclude(id__in=sorted(consumed)).aggregate(first=Min("id"))["first"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Pending:
    """The pending entries of `kind` of an instance, by name, with their documents, and the
    instance's generation (its restarts by ctx.continue_as_new()); `status` is None for an
    unknown instance."""

    status: str | None
    entries: dict[str, dict[str, Any]]
    generation: int = 0

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


def lock_pending(using: str, id: str, kind: str) -> Pending:
    """Take the signal lock (exclusive, until the caller's transaction ends) and read the
    instance's status and its pending entries of `kind`.

    The caller must be inside a transaction on `using`. The lock orders this read with every
    signal and with the writes that register or clear waits; the locking reads see what
    committed last, also on MySQL's REPEATABLE READ.
    """
    backend(using).lock_signals(shared=False)
    row = (
        WorkflowInstance.objects.using(using)
        .filter(pk=id)
        .select_for_update()
        .values_list("status", "generation")
        .first()
    )
    if row is None:
        return Pending(None, {})
    status, generation = row
    rows = (
        JournalEntry.objects.using(using)
        .filter(instance_id=id)
        .order_by("id")
        .values_list("name", "document")
    )
    # Kind and status are stored plainly (a codec encodes only the payload fields).
    entries = {
        name: doc
        for name, doc in rows
        if isinstance(doc, dict) and doc.get("kind") == kind and doc.get("status") == "pending"
    }
    return Pending(status, entries, generation)


def timed_out(doc: dict[str, Any], now: datetime) -> bool:
    """Whether the pending wait of `doc` is past its first deadline at `now`: a signal recorded
    then loses to the timer (the engine takes a signal only if recorded before the deadline),
    so whatever would be acknowledged for it must be refused instead."""
    if doc.get("status") != "pending":
        return False
    deadlines = [datetime.fromisoformat(d) for d in (doc.get("deadlines") or {}).values() if d]
    return bool(deadlines) and now >= min(deadlines)


def timed_out_wait(using: str, id: str, signal: str, key: str | None, now: datetime) -> str | None:
    """The name of a pending wait of instance `id` for (`signal`, `key`) that is past its
    deadline at `now`, or None. Read under the signal lock the caller holds, so that no worker
    decides the wait between this read and the caller's record."""
    pending = JournalEntry.objects.using(using).filter(instance_id=id, document__status="pending")
    rows = pending.values_list("name", "document")
    for name, doc in rows:
        if (
            isinstance(doc, dict)
            and [signal, key] in (doc.get("waits") or [])
            and timed_out(doc, now)
        ):
            return str(name)
    return None


def delivery_id(id: str, generation: int, entry: str, started_at: str | None) -> str:
    """The dedupe id of the one signal that may resume the entry `entry` reached at
    `started_at` in the run `generation`: a second one before the instance moves on is stored
    once. The generation tells apart a run after ctx.continue_as_new() that reaches the same
    entry at the same time (a clock that did not move)."""
    text = json.dumps([id, entry, started_at] + ([generation] if generation else []))
    return "$at:" + hashlib.sha256(text.encode()).hexdigest()


def record_answer(
    using: str,
    *,
    signal: str,
    id: str,
    generation: int,
    entry: str,
    doc: dict[str, Any],
    payload: Any,
    now: datetime,
) -> bool:
    """Record the signal that resumes `entry` of instance `id` in the run `generation` (the
    lock held by lock_pending()); False when one was recorded for it before."""
    with transaction.atomic(using=using, savepoint=False):
        recorded = record_signal(
            using,
            name=signal,
            key=id,
            dedupe_id=delivery_id(id, generation, entry, doc.get("started_at")),
            payload=payload,
            now=now,
            locked=True,
        )
    return recorded.created
