"""Instances: create, read, cancel requests, lease renewals and the lease holder's writes (the
claim is in claims.py, re-exported here).

Every state change here is one conditional statement, or one transaction that locks what it
changes: never a read followed by an unguarded write.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Case, F, Q, Value, When

from ..attributes import Condition, Stored
from ..models import FINISHED, JournalEntry, Signal, Status, Wait, WorkflowInstance
from . import attributes as searchable
from . import parking, payloads
from .backends import backend
from .backends.writes import InstanceWrite as InstanceWrite
from .backends.writes import Release as Release
from .backends.writes import Ride as Ride
from .claims import Claim as Claim
from .claims import claim as claim
from .claims import hand_back as hand_back
from .claims import last_signal_id, rode_claim
from .deadlocks import retries_deadlocks

# The claim lives in claims.py; store.instances.claim and .Claim are where callers find it.
from .parking import parked_by as parked_by
from .signals import record_signal


@dataclass(frozen=True)
class LeaseFlags:
    """What a lease holder learns from a renewal or a write: the operator's requests."""

    cancel_requested: bool
    terminate_requested: bool
    reason: str | None = None
    # The claim that rode on the write (see Ride), when it leased an instance.
    rode: Claim | None = None


@retries_deadlocks
def create_instance(
    using: str,
    instance: WorkflowInstance,
    *,
    tags: list[str] | None = None,
    attributes: dict[str, Stored] | None = None,
    entries: dict[str, dict[str, Any]] | None = None,
) -> tuple[WorkflowInstance, bool]:
    """Insert a pending instance unless one with its id exists, with its tags, search
    attributes and first journal `entries` (decoded documents: the headers start() stores);
    return the stored one and whether this call created it. Atomic per id: of two concurrent
    calls, one creates (and an existing instance keeps the tags it has)."""
    with backend(using).write_transaction(savepoint=False):
        backend(using).take_write_lock()
        instance.signal_cursor = last_signal_id(using)
        created = backend(using).insert_ignore(instance)
        if created:
            if tags or attributes:
                searchable.create(
                    using, instance.pk, tags or [], attributes or {}, instance.created_at
                )
            if entries:
                JournalEntry.objects.using(using).bulk_create(
                    JournalEntry(
                        instance_id=instance.pk,
                        name=name,
                        document=payloads.encode_document(instance.pk, name, document),
                    )
                    for name, document in entries.items()
                )
            return instance, True
        rows = WorkflowInstance.objects.using(using)
        found = rows.filter(pk=instance.pk).first()
        if found is None:
            # MySQL/MariaDB under REPEATABLE READ: the transaction's snapshot (the caller's, or
            # the cursor's read above) predates the row the insert found; a locking read sees it.
            found = rows.select_for_update().get(pk=instance.pk)
        return found, False


def create_instances(
    using: str,
    new: list[tuple[WorkflowInstance, list[str], dict[str, Stored], dict[str, dict[str, Any]]]],
) -> bool:
    """Insert these pending instances (each with its tags, search attributes and first journal
    entries, as create_instance()) in one statement, all of them or none: in a savepoint of the
    caller's transaction, rolled back when an id exists (False)."""
    with backend(using).write_transaction():
        backend(using).take_write_lock()
        cursor = last_signal_id(using)
        instances = [instance for instance, _, _, _ in new]
        for instance in instances:
            instance.signal_cursor = cursor
        if backend(using).insert_ignore_many(instances) != len(instances):
            transaction.set_rollback(True, using=using)  # to the savepoint: nothing written
            return False
        write_beside(using, [(i.pk, i.created_at, t, a, e) for i, t, a, e in new])
    return True


def write_beside(
    using: str,
    created: list[tuple[str, datetime, list[str], dict[str, Stored], dict[str, dict[str, Any]]]],
) -> None:
    """What create_instances() writes beside the instances just inserted, each (id, creation
    time, tags, search attributes, first journal entries): in the caller's transaction."""
    for id, created_at, tags, attributes, _ in created:
        if tags or attributes:
            searchable.create(using, id, tags, attributes, created_at)
    journal = [
        JournalEntry(
            instance_id=id, name=name, document=payloads.encode_document(id, name, document)
        )
        for id, _, _, _, entries in created
        for name, document in entries.items()
    ]
    if journal:
        JournalEntry.objects.using(using).bulk_create(journal)


def get_instance(using: str, id: str) -> WorkflowInstance | None:
    return WorkflowInstance.objects.using(using).filter(pk=id).first()


def load_journal(using: str, id: str) -> list[tuple[str, dict[str, Any]]]:
    """The instance's journal entries, in first-write order, decoded (WorkflowPayloadError when
    the codec cannot read one)."""
    rows = JournalEntry.objects.using(using).filter(instance_id=id).order_by("id")
    return payloads.decode_journal(id, list(rows.values_list("name", "document")))


def load_waits(using: str, ids: Iterable[str]) -> dict[str, list[tuple[str, str | None]]]:
    waits: dict[str, list[tuple[str, str | None]]] = {}
    rows = Wait.objects.using(using).filter(instance_id__in=list(ids)).order_by("id")
    for instance_id, signal, key in rows.values_list("instance_id", "signal", "key"):
        waits.setdefault(instance_id, []).append((signal, key))
    return waits


def list_instances(
    using: str,
    *,
    statuses: list[str] | None = None,
    workflow: str | None = None,
    version: int | None = None,
    parent_id: str | None = None,
    schedule_id: str | None = None,
    subject: Q | None = None,
    tag: str | None = None,
    attributes: list[Condition] | None = None,
    queue: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[WorkflowInstance]:
    """A page of instances matching every filter, oldest first; `subject` is the condition
    subjects.subject_filter() gives."""
    where = Q()
    if statuses:
        where &= Q(status__in=statuses)
    if workflow is not None:
        where &= Q(workflow=workflow)
    if version is not None:
        where &= Q(version=version)
    if parent_id is not None:
        where &= Q(parent_id=parent_id)
    if schedule_id is not None:
        where &= Q(schedule_id=schedule_id)
    if subject is not None:
        where &= subject
    if queue is not None:
        where &= Q(queue=queue)
    return searchable.page(
        using, where, tag=tag, conditions=attributes or [], limit=limit, offset=offset
    )


def _due_now(now: datetime) -> Case:
    """wake_at = now, unless the instance is due already."""
    return Case(
        When(Q(wake_at__isnull=True) | Q(wake_at__gt=now), then=Value(now)),
        default=F("wake_at"),
    )


@retries_deadlocks
def request_cancel(
    using: str, id: str, *, reason: str | None, now: datetime, terminate: bool
) -> bool:
    """Flag a cancel (or a terminate) and make the instance due now; one conditional update."""
    rows = WorkflowInstance.objects.using(using).filter(pk=id)
    if terminate:
        rows = rows.filter(
            status__in=[Status.PENDING, Status.RUNNING, Status.SUSPENDED, Status.COMPENSATING],
            terminate_requested=False,
        )
        changes: dict[str, Any] = {"terminate_requested": True}
    else:
        rows = rows.filter(
            status__in=[Status.PENDING, Status.RUNNING, Status.SUSPENDED], cancel_requested=False
        )
        changes = {}
    return bool(
        rows.update(
            cancel_requested=True,
            cancel_reason=payloads.encode_value(
                "cancel_reason", reason, payloads.instance_at(id, "cancel_reason")
            ),
            wake_at=_due_now(now),
            updated_at=now,
            **changes,
        )
    )


@dataclass(frozen=True)
class Renewal:
    """What a renewal found: the flags of the leases it extended, and the instances whose rows
    another transaction holds locked (an application's select_for_update(), a cancel() inside
    an atomic() still open): still held, not extended this time."""

    flags: dict[str, LeaseFlags]
    busy: list[str] = field(default_factory=list)


@retries_deadlocks
def renew(using: str, leases: list[tuple[str, str]], lease_until: datetime) -> Renewal:
    """Extend every lease still held (id, token), without waiting for a row lock: a row another
    transaction holds locked is skipped (SKIP LOCKED) and reported busy if its committed lease
    token is still the holder's. An instance neither renewed nor busy has lost its lease.

    On SQLite there are no row locks: the statement waits for the database's write lock."""
    if not leases:
        return Renewal({})
    held = functools.reduce(operator.or_, (Q(pk=id, lease_token=token) for id, token in leases))
    rows = WorkflowInstance.objects.using(using)
    backend(using).read_committed_next()
    with backend(using).write_transaction():
        backend(using).take_write_lock()
        locked = rows.filter(held).select_for_update(skip_locked=True)
        ids = list(locked.values_list("id", flat=True))
        if ids:
            rows.filter(pk__in=ids).update(lease_until=lease_until)
        flags = {
            id: LeaseFlags(cancel, terminate, payloads.decode_reason(id, reason))
            for id, cancel, terminate, reason in rows.filter(pk__in=ids).values_list(
                "id", "cancel_requested", "terminate_requested", "cancel_reason"
            )
        }
        missing = [id for id, _ in leases if id not in flags]
        # A plain read does not wait for the lock: it sees the row as last committed.
        busy = rows.filter(held, pk__in=missing).values_list("id", flat=True) if missing else []
        return Renewal(flags, sorted(busy))


@retries_deadlocks
def renew_once_unlocked(
    using: str, id: str, token: str, lease_until: Callable[[], datetime | None]
) -> LeaseFlags | None:
    """Wait for the row lock another transaction holds on instance `id`, however long it is
    held (no lock timeout), then extend its lease to `lease_until()`, computed once the lock is
    taken (None: leave the lease as it is). Returns the flags, or None when the lease is gone.

    Queued behind that lock, the renewal takes the row before a claim can once it is released:
    a claim's SKIP LOCKED passes over a row whose lock another transaction waits for."""
    rows = WorkflowInstance.objects.using(using)
    with backend(using).write_transaction():
        backend(using).take_write_lock()
        backend(using).await_row_lock(id)
        found = (
            rows.filter(pk=id, lease_token=token)
            .select_for_update()
            .values_list("cancel_requested", "terminate_requested", "cancel_reason")
            .first()
        )
        if found is None:
            return None
        until = lease_until()
        if until is not None:
            rows.filter(pk=id).update(lease_until=until)
        return LeaseFlags(found[0], found[1], payloads.decode_reason(id, found[2]))


@retries_deadlocks
def write(
    using: str, id: str, token: str, write: InstanceWrite, ride: Ride | None = None
) -> LeaseFlags | None:
    """Every write of the lease holder, all or nothing, only while `token` is the lease token.

    Returns the cancel/terminate flags, or None (having written nothing) when the lease is gone.
    With `ride`, a release may lease the next due instance too (Ride): the flags' `rode`.
    """
    write = payloads.encode_write(id, write)
    fast = backend(using).fast_write(id, token, write, ride)
    if fast is not NotImplemented:
        if fast is None:
            return None
        rode = None
        if ride is not None and len(fast) > 3 and fast[3][0]:
            rode = rode_claim(using, *fast[3], first_journals=ride.first_journals)
        return LeaseFlags(fast[0], fast[1], payloads.decode_reason(id, fast[2]), rode)
    with backend(using).write_transaction():
        backend(using).take_write_lock()
        if write.signal is not None:
            backend(using).lock_signals(shared=False)
        elif write.release is not None and (write.release.waits or write.release.had_waits):
            # Shared with the other writes, exclusive with signals: a signal's wake-up and a
            # write that registers or clears waits never interleave (nor deadlock on MySQL).
            backend(using).lock_signals(shared=True)
        held = WorkflowInstance.objects.using(using).filter(pk=id, lease_token=token)
        flags = held.select_for_update().values_list(
            "cancel_requested",
            "terminate_requested",
            "cancel_reason",
            "awaited",
            "created_at",
            "workflow",
            "concurrency_key",
        )
        row = flags.first()
        if row is None:
            return None
        cancel_requested, terminate_requested, reason, awaited, created_at, workflow, key = row
        entries = dict(write.entries)
        if not (cancel_requested or terminate_requested):
            entries.update(write.guarded_entries)
        if write.restart:
            JournalEntry.objects.using(using).filter(instance_id=id)._raw_delete(using)
        if write.attributes:
            searchable.write(using, id, write.attributes, created_at)
        if entries:
            JournalEntry.objects.using(using).bulk_create(
                [
                    JournalEntry(instance_id=id, name=name, document=document)
                    for name, document in entries.items()
                ],
                **backend(using).upsert_kwargs(["instance", "name"], ["document"]),
            )
        changes = dict(write.changes)
        if write.signal is not None:
            record_signal(using, **write.signal, now=write.now, locked=True)
        release = write.release
        if release is not None:
            if release.had_waits:
                Wait.objects.using(using).filter(instance_id=id)._raw_delete(using)
            if release.waits:
                Wait.objects.using(using).bulk_create(
                    [Wait(instance_id=id, signal=signal, key=key) for signal, key in release.waits]
                )
            wake_at = release.wake_at
            status = changes.get("status")
            if status in FINISHED:
                wake_at = None
            elif not release.hold and (
                (cancel_requested and status == Status.SUSPENDED) or _signal_arrived(using, release)
            ):
                wake_at = write.now
            changes.update(lease_token=None, lease_until=None, wake_at=wake_at)
        elif write.lease_until is not None:
            changes["lease_until"] = write.lease_until
        if changes:
            if set(changes) - {"lease_until"}:
                changes["updated_at"] = write.now
            held.update(**changes)
        if release is not None and key is not None:
            parking.unpark_key(using, workflow, key)
        if awaited and (write.announce or changes.get("status") in FINISHED):
            backend(using).notify_ended(id)
        return LeaseFlags(cancel_requested, terminate_requested, payloads.decode_reason(id, reason))


def _signal_arrived(using: str, release: Release) -> bool:
    """Whether a signal the execution did not see matches one of the waits it registers."""
    if not release.waits:
        return False
    matches = functools.reduce(
        operator.or_,
        (
            Q(name=signal, key=key) if key is not None else Q(name=signal, key__isnull=True)
            for signal, key in release.waits
        ),
    )
    return Signal.objects.using(using).filter(matches, id__gt=release.signal_cursor).exists()


def mark_awaited(using: str, id: str) -> None:
    """A result() waits for the instance: announce its end (on PostgreSQL, with NOTIFY)."""
    WorkflowInstance.objects.using(using).filter(pk=id, awaited=False).update(awaited=True)
