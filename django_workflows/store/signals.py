"""Signals: recorded under the signal lock, deduplicated by (name, dedupe id), waking waiters."""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Min, Q

from ..models import Signal
from . import payloads
from .backends import backend
from .deadlocks import retries_deadlocks


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
