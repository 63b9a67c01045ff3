"""Signals addressed to one place in one instance (a breakpoint, an external task): the
pending journal entries they may resume, read under the signal lock, and their record."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from ..models import FINISHED, JournalEntry, WorkflowInstance
from .backends import backend
from .signals import record_signal

# Both keyed by the instance id; "generation" is in the payload of a run after continue_as_new().
BREAKPOINT_SIGNAL = "$breakpoint"  # payload {"name", "at", "generation"}
TASK_SIGNAL = "$task"  # payload {"task", "attempt", "at", "generation", ...}
TASK_PREFIX = "$task:"  # a task attempt's wait: "$task:<name>#<attempt>"
# The field retry() sets on the entry of the attempt a task gave up at (its wait, or its
# dispatch when that raised): the task's next attempt is dispatched at once, counted from 1.
GIVEN_BACK = "attempts_back"


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


def lock_and_read(using: str, id: str, kind: str) -> Pending:
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


def record(
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
    lock held by lock_and_read()); False when one was recorded for it before."""
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
