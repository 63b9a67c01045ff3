"""An operator's changes: reopen a finished instance, delete one, purge the old ones.

Each re-checks its conditions on the rows it changes, under the row lock, so it never acts on
an instance that another change moved on in the meantime.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max, Min

from ..models import (
    UNFINISHED,
    JournalEntry,
    RateLimitWindow,
    Signal,
    Wait,
    WorkflowInstance,
)
from . import payloads
from .backends import backend
from .deadlocks import retries_deadlocks


@dataclass(frozen=True)
class Reopen:
    """What retry() changes: only while the instance is still as the engine read it."""

    expect_status: str
    expect_runs: int
    status: str
    error: dict[str, Any] | None
    entries: dict[str, dict[str, Any]]
    drop_entries: list[str]
    now: datetime
    deadline: datetime | None | Any


def reopen(using: str, id: str, change: Reopen, *, keep_deadline: Any) -> bool:
    """Make a finished instance due again, as one transaction that locks its row: of two
    concurrent retries, one is accepted."""
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        row = (
            WorkflowInstance.objects.using(using)
            .select_for_update()
            .filter(
                pk=id,
                status=change.expect_status,
                runs=change.expect_runs,
                lease_token__isnull=True,
            )
        )
        if not row.values_list("pk", flat=True).first():
            return False
        if change.drop_entries:
            JournalEntry.objects.using(using).filter(
                instance_id=id, name__in=change.drop_entries
            )._raw_delete(using)
        if change.entries:
            JournalEntry.objects.using(using).bulk_create(
                [
                    JournalEntry(instance_id=id, name=name, document=document)
                    for name, document in payloads.encode_entries(id, change.entries).items()
                ],
                **backend(using).upsert_kwargs(["instance", "name"], ["document"]),
            )
        Wait.objects.using(using).filter(instance_id=id)._raw_delete(using)
        fields: dict[str, Any] = {
            "status": change.status,
            "error": payloads.encode_value(
                "error", change.error, payloads.instance_at(id, "error")
            ),
            "wake_at": change.now,
            "updated_at": change.now,
            "cancel_requested": False,
            "terminate_requested": False,
            "cancel_reason": None,
        }
        if change.deadline is not keep_deadline:
            fields["deadline"] = change.deadline
        row.update(**fields)
        return True


def delete_instance(using: str, id: str, statuses: list[str]) -> str | None:
    """Delete the instance with its journal and waits if its status is one of `statuses`;
    the status it had, or None. A worker holding its lease finds it gone at its next write.

    A leased instance's lease ends here, with no release to come and no lapsed lease left
    behind: its key's parked instances are put back, under its row's lock (store/parking.py)."""
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        found = (
            WorkflowInstance.objects.using(using)
            .select_for_update()
            .filter(pk=id, status__in=statuses)
            .values_list("status", "workflow", "concurrency_key", "lease_until")
            .first()
        )
        if found is None:
            return None
        status, workflow, key, lease_until = found
        _delete(using, [id])
        if key is not None and lease_until is not None:
            backend(using).unpark_key(workflow, key)
        return status


def _delete(using: str, ids: list[str]) -> int:
    """Delete the instances `ids` and every row that points at them (Backend.delete_instances)."""
    return backend(using).delete_instances(ids)


def _oldest_finished(using: str, statuses: list[str], before: datetime, limit: int) -> list[str]:
    """The ids of up to `limit` instances with one of `statuses` updated before `before`, oldest
    first, locked (passing over those locked elsewhere) where the database can skip locks.

    One query per status, each in the order of the status index (status, updated_at): with
    the statuses in one IN list the database sorted every finished instance first (1.8 s of a
    purge batch with 1,000,000 finished). The oldest `limit` of their rows are the same as one
    query's; the others stay locked only until the purge commits."""
    rows: list[tuple[datetime, str]] = []
    for status in sorted(set(statuses)):
        candidates = (
            WorkflowInstance.objects.using(using)
            .filter(status=status, updated_at__lt=before)
            .order_by("updated_at", "id")
        )
        if backend(using).has_skip_locked:
            candidates = candidates.select_for_update(skip_locked=True)
        rows += [(at, id) for id, at in candidates.values_list("pk", "updated_at")[:limit]]
    return [id for _, id in sorted(rows)[:limit]]


@dataclass(frozen=True)
class Purged:
    instances: int
    signals: int
    rate_limits: int


def purge(using: str, *, statuses: list[str], before: datetime, limit: int) -> Purged:
    """Delete up to `limit` instances finished before `before` (oldest first), the signals no
    unfinished instance can take any more, and the rate-limit windows that ended."""
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        # The rows are locked (or, on SQLite, the database is) until the deletes commit: a
        # retry that reopens one of them waits for the purge, or the purge skips it.
        ids = _oldest_finished(using, statuses, before, limit)
        instances = _delete(using, ids) if ids else 0

    # A signal can go once every unfinished instance started after it (an instance only takes
    # signals above its cursor), it is older than `before`, and it is not the newest one.
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        newest = Signal.objects.using(using).aggregate(newest=Max("id"))["newest"] or 0
        # The oldest signals that could go, by the newest alone (the ceiling below is never
        # higher): with none, the lowest cursor, a read of every unfinished instance (a full
        # scan on MariaDB, 3 s with 100,000 suspended), is not needed.
        signal_ids = list(
            Signal.objects.using(using)
            .filter(id__lte=newest - 1, created_at__lt=before)
            .order_by("id")
            .values_list("id", flat=True)[:limit]
        )
        if signal_ids:
            lowest = (
                WorkflowInstance.objects.using(using)
                .filter(status__in=UNFINISHED)
                .aggregate(lowest=Min("signal_cursor"))["lowest"]
            )
            ceiling = min(newest - 1, newest if lowest is None else lowest)
            signal_ids = [id for id in signal_ids if id <= ceiling]
        signals = (
            Signal.objects.using(using)
            .filter(id__in=signal_ids, id__lte=ceiling, created_at__lt=before)
            ._raw_delete(using)
            if signal_ids
            else 0
        )

    return Purged(instances, signals, _purge_windows(using, before=before, limit=limit))


@retries_deadlocks
def _purge_windows(using: str, *, before: datetime, limit: int) -> int:
    """Delete up to `limit` rate-limit windows that ended before `before`, passing over those a
    claim locks. On MySQL/MariaDB a claim locks a window by its unique key, then its row, and
    the delete takes them the other way round: when one such claim waits for a window this
    locked, the database breaks the deadlock, and whichever it rolled back runs again."""
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        windows = RateLimitWindow.objects.using(using).filter(window_end__lt=before)
        if backend(using).has_skip_locked:
            windows = windows.select_for_update(skip_locked=True)
        window_ids = list(windows.order_by("id").values_list("id", flat=True)[:limit])
        return (
            RateLimitWindow.objects.using(using)
            .filter(id__in=window_ids, window_end__lt=before)
            ._raw_delete(using)
            if window_ids
            else 0
        )
