"""Instances: create, read, cancel requests, lease renewals and the lease holder's writes (the
claim is in claims.py, re-exported here).

Every state change here is one conditional statement, or one transaction that locks what it
changes: never a read followed by an unguarded write.
"""

from __future__ import annotations

import functools
import operator
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, F, Q, Value, When

from ..attributes import Condition, Stored
from ..models import JournalEntry, Status, Wait, WorkflowInstance
from . import attributes as searchable
from . import fairness, payloads
from .backends import backend
from .backends.rows import RELATED as RELATED
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
from .published import PREFIX


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
        fairness.take_turns(using, [instance])
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


def start_alone(using: str, instance: WorkflowInstance) -> tuple[WorkflowInstance, bool]:
    """create_instance() of an instance with nothing written beside its row (no tags, search
    attributes, journal entries or fair key), outside any transaction (or inside the caller's
    where Backend.starts_alone_in_transactions): its INSERT in one statement where the
    database allows (Backend.start_alone), which wakes the workers of other processes when it
    inserts. The stored instance (`instance` itself when this call created it, without the
    signal cursor the database gave it) and whether it did."""
    if backend(using).start_alone(instance):
        return instance, True
    found = WorkflowInstance.objects.using(using).filter(pk=instance.pk).first()
    if found is None:  # purged since: start it again, as create_instance() would
        return create_instance(using, instance)
    return found, False


DEBOUNCE_LOCKS = 4096
"""How many locks order the debounced starts (lock_debounced_starts): one per id's hash."""


def lock_debounced_starts(using: str, id: str) -> None:
    """Take, until the transaction ends, the lock that orders the debounced starts of `id`,
    before the start's INSERT. On MySQL and MariaDB an INSERT that finds the id locks its row
    shared, and two starts that both found it and then lock it for update (debounce_instance)
    would deadlock; after this lock, one at a time finds it. One lock of DEBOUNCE_LOCKS, by the
    id's hash, so that the lock rows MySQL keeps stay few."""
    backend(using).lock_names([f"$debounce:{zlib.crc32(id.encode()) % DEBOUNCE_LOCKS}"])


def debounce_instance(
    using: str, instance: WorkflowInstance, quiet: timedelta, longest: timedelta | None
) -> WorkflowInstance | None:
    """A start with a debounce found `instance`'s id taken: if the stored instance is of the
    same workflow, pending and never claimed, give it `instance`'s input (and the keys derived
    from it) and move its start to `quiet` after this start, at most `longest` after the
    stored one was created; return it. None when it has begun (or is another workflow's).

    The locking read orders concurrent starts of the id: the last to commit leaves its input.
    A claim that holds the row first makes it begun; one that comes after passes over it."""
    with backend(using).write_transaction(savepoint=False):
        backend(using).take_write_lock()
        rows = WorkflowInstance.objects.using(using).filter(
            pk=instance.pk,
            workflow=instance.workflow,
            status=Status.PENDING,
            lease_token__isnull=True,
        )
        found = rows.select_for_update().first()
        if found is None:
            return None
        wake_at = instance.created_at + quiet
        if longest is not None:
            wake_at = min(wake_at, found.created_at + longest)
        changes = {
            "input": instance.input,
            "concurrency_key": instance.concurrency_key,
            "rate_limit_key": instance.rate_limit_key,
            "fair_key": instance.fair_key,
            "wake_at": wake_at,
            "parked": False,
            "updated_at": instance.created_at,
        }
        rows.update(**changes)
        for name, value in changes.items():
            setattr(found, name, value)
        return found


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
        fairness.take_turns(using, instances)
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
    """The instance `id` (its payloads as stored), or None."""
    return backend(using).rows.get(id)


def get_instance_and_related(using: str, id: str) -> tuple[WorkflowInstance, set[str]] | None:
    """The instance `id` (its payloads as stored) and which of its waits, published values,
    tags, attributes and streams it has (rows.RELATED), read in one query; None for an
    unknown id."""
    return backend(using).rows.with_related(id, PREFIX)


def get_instance_and_entry(
    using: str, id: str, name: str
) -> tuple[WorkflowInstance, dict[str, Any] | None] | None:
    """The instance `id` and its journal entry `name` (None while it has none), read in one
    query and decoded (WorkflowPayloadError when the codec cannot read them); None for an
    unknown id."""
    found = backend(using).rows.with_entry(id, name)
    if found is None:
        return None
    row, document = found
    payloads.decode_instance(row)
    return row, None if document is None else payloads.decode_document(id, name, document)


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
    fair_key: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[tuple[WorkflowInstance, set[str]]]:
    """A page of instances matching every filter, oldest first, each with which of its waits,
    published values, tags, attributes and streams it has (rows.RELATED, read by one more
    query); `subject` is the condition subjects.subject_filter() gives."""
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
    if fair_key is not None:
        where &= Q(fair_key=fair_key)
    rows = searchable.page(
        using, where, tag=tag, conditions=attributes or [], limit=limit, offset=offset
    )
    related = backend(using).rows.related_of([row.id for row in rows], PREFIX)
    return [(row, related.get(row.id, set())) for row in rows]


def holding(rows: list[tuple[WorkflowInstance, set[str]]]) -> dict[str, list[str]]:
    """For each of RELATED, the ids of the instances of `rows` (list_instances()'s) that hold
    rows of it: the ids to read it for, none when it is empty."""
    return {name: [row.id for row, related in rows if name in related] for name in RELATED}


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
    With `ride`, a release may lease the next due instance too (Ride): the flags' `rode`. The
    backend writes, whole, in one call (Backend.write); here the payloads are encoded and the
    flags decoded.
    """
    write = payloads.encode_write(id, write)
    written = backend(using).write(id, token, write, ride)
    if written is None:
        return None
    rode = None
    if written.rode is not None and written.rode[0]:
        rode = rode_claim(
            using, *written.rode, first_journals=ride is not None and ride.first_journals
        )
    reason = payloads.decode_reason(id, written.cancel_reason)
    return LeaseFlags(written.cancel_requested, written.terminate_requested, reason, rode)


def mark_awaited(using: str, id: str) -> None:
    """A result() waits for the instance: announce its end (on PostgreSQL, with NOTIFY)."""
    WorkflowInstance.objects.using(using).filter(pk=id, awaited=False).update(awaited=True)
