"""The registry of worker processes: each worker's row written, refreshed and deleted, the rows
read, the gone ones purged, each queue's backlog of due instances counted, and the instances
counted by workflow and status (for the metrics)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Min, Q, QuerySet

from ..models import UNFINISHED, WorkerProcess, WorkflowInstance
from .backends import backend

# A worker is gone once it missed this many heartbeats.
MISSED_HEARTBEATS = 3


@dataclass(frozen=True)
class Registration:
    """What a worker process says of itself when it registers."""

    id: str
    host: str
    pid: int
    queues: list[str]
    workflows: list[str]
    concurrency: int
    version: str
    heartbeat: float  # seconds
    started_at: datetime


def gone_at(last_seen_at: datetime, heartbeat: float) -> datetime:
    """When a worker last seen at `last_seen_at` counts as gone unless it is seen again."""
    return last_seen_at + timedelta(seconds=heartbeat * MISSED_HEARTBEATS)


def register(
    using: str, registration: Registration, *, now: datetime, running: int = 0, executed: int = 0
) -> None:
    """Write the worker's row, or write it over (a worker id registered again: its row was
    deleted by purge() or by hand, or a process reused the id)."""
    fields: dict[str, Any] = {
        "host": registration.host,
        "pid": registration.pid,
        "queues": registration.queues,
        "workflows": registration.workflows,
        "concurrency": registration.concurrency,
        "version": registration.version,
        "heartbeat": registration.heartbeat,
        "started_at": registration.started_at,
        "last_seen_at": now,
        "gone_at": gone_at(now, registration.heartbeat),
        "running": running,
        "executed": executed,
    }
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        WorkerProcess.objects.using(using).bulk_create(
            [WorkerProcess(id=registration.id, **fields)],
            **backend(using).upsert_kwargs(["id"], list(fields)),
        )


def beat(
    using: str, registration: Registration, *, now: datetime, running: int, executed: int
) -> bool:
    """Refresh the worker's row: last seen now, with what it runs and ran. A row that is gone
    (purged, deleted in the admin) is written again. Returns whether the row was there."""
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        found = (
            WorkerProcess.objects.using(using)
            .filter(pk=registration.id)
            .update(
                last_seen_at=now,
                gone_at=gone_at(now, registration.heartbeat),
                running=running,
                executed=executed,
            )
        )
    if not found:
        register(using, registration, now=now, running=running, executed=executed)
    return bool(found)


def unregister(using: str, id: str) -> None:
    """Delete the worker's row (a clean exit)."""
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        WorkerProcess.objects.using(using).filter(pk=id)._raw_delete(using)


def workers(using: str) -> list[WorkerProcess]:
    """Every registered worker, the live ones first (latest gone_at first), then by id."""
    return list(WorkerProcess.objects.using(using).order_by("-gone_at", "id"))


def seen_since(using: str, since: datetime) -> list[WorkerProcess]:
    """The workers last seen at or after `since`, live or gone (by the last-seen index)."""
    return list(WorkerProcess.objects.using(using).filter(last_seen_at__gte=since).order_by("id"))


def purge_gone(using: str, *, before: datetime) -> int:
    """Delete the workers gone before `before`; how many."""
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        return WorkerProcess.objects.using(using).filter(gone_at__lt=before)._raw_delete(using)


@dataclass(frozen=True)
class QueueDue:
    """Due instances in one queue: how many, and the oldest due time."""

    queue: str
    count: int
    oldest: datetime


@dataclass(frozen=True)
class Due:
    """Due instances of one workflow version in one queue: how many, and the oldest due time."""

    queue: str
    workflow: str
    version: int
    count: int
    oldest: datetime


def queue_backlog(using: str, *, now: datetime) -> list[QueueDue]:
    """The due instances that no worker holds, by queue, in the queues' order: what a claim
    takes, due now and not leased (or their lease lapsed), parked ones included. One aggregate
    query, which the queue's claim index dw_instance_queue_due answers alone: it holds every
    column the query reads. A finished instance has no wake time (the write that finishes it
    clears it; a claim would run it again otherwise), so the status is not read. On MariaDB,
    with 10,000 due among 1,000,000 instances, 4 ms against 371 ms reading each due row's
    page (benchmarks/admin_scale.py, the workers page)."""
    rows = _due(using, now, None).values("queue").annotate(count=Count("id"), oldest=Min("wake_at"))
    return [QueueDue(r["queue"], r["count"], r["oldest"]) for r in rows.order_by("queue")]


def backlog(using: str, *, now: datetime, queues: list[str]) -> list[Due]:
    """The due instances of `queues` that no worker holds (as queue_backlog() counts them) by
    queue and workflow version, in that order. The workflow and version are read from each
    due instance's row: this is for the queues that need them (a live worker of the queue
    claims some workflows only)."""
    rows = (
        _due(using, now, queues)
        .values("queue", "workflow", "version")
        .annotate(count=Count("id"), oldest=Min("wake_at"))
    )
    return sorted(
        (Due(r["queue"], r["workflow"], r["version"], r["count"], r["oldest"]) for r in rows),
        key=lambda due: (due.queue, due.workflow, due.version),
    )


def _due(using: str, now: datetime, queues: list[str] | None) -> QuerySet[WorkflowInstance]:
    """The due instances of `queues` (None: every queue) that no worker holds, as ranges of the
    claim indexes (Backend.due_ranges)."""
    rows = WorkflowInstance.objects.using(using).filter(
        Q(wake_at__lte=now), Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    )
    return backend(using).due_ranges(rows, queues).order_by()


def unfinished_queues(using: str) -> set[str]:
    """The queues of the unfinished instances (for the system check)."""
    return set(
        WorkflowInstance.objects.using(using)
        .filter(status__in=UNFINISHED)
        .order_by()
        .values_list("queue", flat=True)
        .distinct()
    )


def instance_counts(using: str) -> list[tuple[str, str, int]]:
    """How many instances each workflow has in each status, as (workflow, status, count) in
    that order: one aggregate query over the (workflow, version, status) index."""
    rows = (
        WorkflowInstance.objects.using(using)
        .order_by()
        .values("workflow", "status")
        .annotate(count=Count("id"))
    )
    return sorted((r["workflow"], r["status"], r["count"]) for r in rows)
