"""The interface every database backend of the store implements, with the generic bodies.

A backend is chosen once per database alias (store.backends.backend) and does each operation
that differs between databases whole: the claim and the lease holder's fenced write, a signal's
record, a purge's deletes; and it knows the statements that differ around them: the signal lock
and the name locks, SQLite's write lock, upserts, NOTIFY/LISTEN, and the lease lock of a
renewal that waits for a row lock. This base class is also the backend of a database with none
of its own: each operation's body by the ORM, and no lock beyond the rows' own. A database's
backend overrides an operation where it has a faster whole way, and hands what that way cannot
do to the body here (super()).
"""

from __future__ import annotations

import contextlib
import functools
import operator
import random
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple

from django.core.checks import CheckMessage
from django.db import connections, transaction
from django.db.models import BooleanField, Case, F, Model, Q, QuerySet, Sum, Value, When
from django.db.models.expressions import RawSQL
from django.db.models.lookups import Exact

from ...attributes import Stored
from ...errors import WorkflowIdConflictError
from ...models import (
    FINISHED,
    InstanceAttribute,
    InstanceTag,
    JournalEntry,
    Signal,
    Status,
    Wait,
    WakeupCounter,
    WorkflowInstance,
    WorkflowSchedule,
    WorkflowStream,
    WorkflowStreamItem,
)
from .. import payloads
from .ahead import Take, prepared_field, take_by_case
from .params import insert_rows_unless_exist, insert_unless_exists, insert_with, row_values
from .rows import InstanceRows
from .schedules import write_by_case

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

    from .writes import ClaimRequest, InstanceWrite, Ride

NOTIFY_CHANNEL = "django_workflows"
"""Where a start or signal wakes the workers of other processes (see Backend.notify)."""

ENDED_CHANNEL = "django_workflows_ended"
"""Where an instance's end wakes result() in other processes (see Backend.notify_ended)."""


CLAIM_ORDER = ("priority", "wake_at", "created_at", "id")
"""The claim order, which the partial claim index holds (without lease_until, NULL throughout
its rows: indexes.DueIndex), so that the database reads the free range in index order."""

ATTRIBUTE_COLUMNS = ("kind", "text", "number", "moment")
"""A search attribute's value columns (attribute_row)."""

DELETE_CHUNK = 1000
"""The most instances one of the generic deletes names (Backend.delete_instances)."""


class Written(NamedTuple):
    """What a lease holder's write returns: the instance's flags, its cancel reason as stored,
    and the instances a claim riding on it leased with the last signal id (None: nothing
    rode; see Ride)."""

    cancel_requested: bool
    terminate_requested: bool
    cancel_reason: str | None
    rode: tuple[list[Any], int] | None = None


def attribute_row(id: str, name: str, value: Stored, created_at: Any) -> Any:
    """The InstanceAttribute row of search attribute `name` of instance `id`, created at
    `created_at` (each attribute row keeps a copy of its instance's creation time)."""
    return InstanceAttribute(
        instance_id=id,
        name=name,
        kind=value.kind,
        text=value.text,
        number=value.number,
        moment=value.moment,
        created_at=created_at,
    )


_thread = threading.local()  # each thread's wake-up shard (Backend.notify)
_WAKE_WAITERS: dict[tuple[str, bool], str] = {}  # Backend.wake_waiters()'s, by vendor and keyed


class Backend:
    """The store's statements for the database `alias`: one instance per alias, shared by every
    thread (each method takes the thread's own connection)."""

    has_advisory_locks = False
    """Transaction-scoped advisory locks order signals, name locks and lease locks (PostgreSQL)."""

    has_listen_notify = False
    """Committed starts, signals and ends reach other processes at once (PostgreSQL)."""

    has_rides = False
    """A lease holder's release can lease the next due instance in the same statement (write()
    with a Ride): a busy worker then needs few claims of its own (PostgreSQL)."""

    serializes_writes = False
    """One writer at a time for the whole database (SQLite): run one worker process."""

    rejects_nul = False
    """JSON values cannot hold a NUL character (PostgreSQL's jsonb)."""

    max_value_bytes = 1_000_000_000
    """The most JSON, in bytes, one value may take (SQLite: a string of a billion bytes);
    see max_allowed_packet for the databases whose limit is the server's packet."""

    exact_collation: str | None = None
    """The collation of an id, name or key column; None where comparisons are exact anyway."""

    wakeup_shards = 8
    """How many WakeupCounter rows the starts and signals count their wake-ups in, where the
    database has no notifications: concurrent counts then seldom wait for one another."""

    counts_wakeups_after_commit = False
    """Whether notify() counts after the commit, in a statement of its own, rather than in
    the transaction: where a row lock would last until the caller's commit (MySQL, MariaDB)."""

    starts_alone_in_transactions = False
    """start_alone() can run inside the caller's transaction too, its wake-up of the other
    processes sent at the commit (PostgreSQL's NOTIFY); elsewhere it counts the wake-up after
    its own commit, or takes the process's turn to write, so only outside one."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.rows = InstanceRows(alias)  # instances read by hand-written SELECTs

    @property
    def connection(self) -> BaseDatabaseWrapper:
        """This thread's connection to the database."""
        return connections[self.alias]

    @functools.cached_property
    def has_skip_locked(self) -> bool:
        """Whether claims can SELECT ... FOR UPDATE SKIP LOCKED (SQLite serializes instead)."""
        features = self.connection.features
        return bool(features.has_select_for_update and features.has_select_for_update_skip_locked)

    def check(self) -> list[CheckMessage]:
        """The system checks of this database (manage.py check --database)."""
        return []

    def prepare_worker(self) -> None:
        """What a worker process sets on the database at start-up, before its first claim:
        nothing here (see SQLiteBackend.prepare_worker)."""

    def forget_routines(self) -> None:
        """Ask again at the next write whether the database has the store's routines
        (routines.py), once a migration made or dropped them; nothing where it has none."""

    def write_transaction(self, *, savepoint: bool = True) -> AbstractContextManager[Any]:
        """A store transaction on this alias: transaction.atomic(), and on SQLite the
        process's turn to write first (see SQLiteBackend.write_transaction)."""
        return transaction.atomic(using=self.alias, savepoint=savepoint)

    # Locks, each held until the end of the current transaction.

    def take_write_lock(self) -> None:
        """Take the database's write lock at the start of a store transaction, where one
        writer at a time writes (SQLite); a no-op elsewhere."""

    def lock_signals(self, *, shared: bool) -> None:
        """Take the signal lock until the end of the current transaction.

        Signals take it exclusively, writes that register waits take it shared: signal ids then
        become visible in id order, and a signal never slips past an instance that is
        suspending. Without a lock of the database's own, the rows' locks are all there is."""
        self.take_write_lock()

    def lock_names(self, names: list[str]) -> None:
        """Exclusive transaction-scoped locks on `names`, taken in sorted order (claims under
        limits)."""

    def await_row_lock(self, id: str) -> None:
        """Before a renewal that waits for the lock another transaction holds on instance
        `id`: for the rest of the transaction, wait for row locks as long as they are held,
        and keep claims off the instance meanwhile (see lapsed_lease_free)."""

    def lapsed_lease_free(self) -> Q:
        """The condition (with lease_until < now) for a claim to take an instance whose lease
        has lapsed: that no renewal waits for its row (await_row_lock). Always true here."""
        return Q()

    # Inserts and upserts by the ORM's own statements.

    def insert_ignore(self, obj: Model) -> bool:
        """INSERT the row unless its key exists (ON CONFLICT DO NOTHING / INSERT IGNORE / OR
        IGNORE). Returns whether it inserted. Never catches a duplicate-key error: inside the
        caller's transaction on PostgreSQL that would abort the whole transaction."""
        return self.insert_ignore_many([obj]) == 1

    def insert_ignore_many(self, objs: Sequence[Model]) -> int:
        """INSERT the rows, of one model, in as few statements as the database's parameter
        limit allows, each unless its key exists (as insert_ignore()), by hand (params.py).
        Returns how many it inserted."""
        return insert_unless_exists(objs, self.connection) if objs else 0

    def insert_or_lock(self, obj: Model, key_field: str) -> None:
        """INSERT the row unless its unique key exists; the caller locks it FOR UPDATE next.
        PostgreSQL's ON CONFLICT DO NOTHING waits for the inserting transaction and takes no
        lock; SQLite has one writer at a time."""
        self.insert_ignore(obj)

    def upsert_kwargs(self, unique_fields: list[str], update_fields: list[str]) -> dict[str, Any]:
        """bulk_create() arguments for an upsert (MySQL's ON DUPLICATE KEY UPDATE takes no
        target)."""
        kwargs: dict[str, Any] = {"update_conflicts": True, "update_fields": update_fields}
        if self.connection.features.supports_update_conflicts_with_target:
            kwargs["unique_fields"] = unique_fields
        return kwargs

    # A parameter of a type the database must be told where a CASE gives it (PostgreSQL).
    json_parameter = "%s"
    datetime_parameter = "%s"

    def write_schedules(self, token: str, now: Any, writes: list[tuple[str, Any, Any]]) -> int:
        """store.schedules.write_schedules(): one UPDATE whose CASE gives each schedule (id,
        state, wake time) its own state and wake time, only while `token` is its lease token.
        Hand-written: the ORM's CASE of one When per schedule cost more CPU to build than the
        rest of a tick. Returns the rows written."""
        return write_by_case(
            self.connection, token, now, writes, (self.json_parameter, self.datetime_parameter)
        )

    # Occurrences prepared ahead (ahead.py): their values made ready before the write.
    def prepare_take(
        self, id: str, revision: int, own: str, state: Any, wake_at: Any, created_at: Any
    ) -> Any:
        return (
            prepared_field(self.connection, WorkflowSchedule, "state", state),
            prepared_field(self.connection, WorkflowSchedule, "wake_at", wake_at),
        )

    def prepare_row(self, obj: Model) -> list[Any]:
        return row_values(obj, self.connection)

    def prepare_value(self, model: type[Model], name: str, value: Any) -> Any:
        return prepared_field(self.connection, model, name, value)

    def take_schedules(self, now: Any, takes: list[Take], unfinished: tuple[str, ...]) -> list[str]:
        """The ids of the schedules taken (prepared.Take says when a take writes)."""
        return take_by_case(self.connection, now, takes, unfinished)

    def insert_prepared(self, model: type[Model], rows: list[list[Any]]) -> int:
        """INSERT rows prepared by prepare_row() (and prepare_value()), each unless its key
        exists. Returns how many it inserted."""
        return insert_rows_unless_exist(model, rows, self.connection) if rows else 0

    # The claim, the lease holder's write, a signal's record and a purge's deletes, each whole:
    # the ORM's generic bodies here, a database's faster way in its own backend, which hands
    # what its way cannot do to these.

    def claim(
        self, request: ClaimRequest, pick: Callable[[], list[str]] | None = None
    ) -> tuple[list[Any], int]:
        """Lease what `request` asks for: (the instances in claim order, the last signal id).
        `pick`, for a claim under limits: the ids to lease, chosen inside the
        claim's transaction after its write lock (store/limits.py, which reads the candidates
        by claim_candidates()); without it, the first `limit` due candidates. In one
        transaction: the candidates, then their lease (lease())."""
        self.read_committed_next()  # no gap locks where the leased rows' entries go
        with self.write_transaction():
            self.take_write_lock()
            if pick is not None:
                ids = pick()
            else:
                found = self.claim_candidates(
                    now=request.now,
                    limit=request.limit,
                    workflows=request.workflows,
                    queues=request.queues,
                )
                ids = [row[0] for row in found]
            if not ids:
                return [], 0
            return self.lease(
                ids,
                token=request.token,
                owner=request.owner,
                lease_until=request.lease_until,
                now=request.now,
            )

    def claim_candidates(
        self,
        *,
        now: Any,
        limit: int,
        workflows: list[tuple[str, int]],
        where: tuple[str, list[Any]] = ("", []),
        queues: list[str] | None = None,
        flag: tuple[str, list[Any]] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Inside a claim's transaction: up to `limit` due instances of `workflows` (in
        `queues`; None: every queue) as rows (id, workflow, concurrency_key, rate_limit_key),
        with `flag`'s value last when given, in claim order, locked FOR UPDATE SKIP LOCKED
        where the database can (`where`: a condition's SQL and its parameters, the limits' full
        workflows and keys; `flag`: a boolean expression's, whether the row's key is full).

        The ORM's two ranges: a due instance that a live lease holds is not in the claim
        index's range (dw_instance_due is partial, `lease_until IS NULL`, where the database
        has partial indexes), so the free instances are read in claim order and the few whose
        lease lapsed apart (dw_instance_leased, sorted), and the two merged: one scan with
        `lease_until IS NULL OR lease_until < now` would read every instance that runs before
        the first free one. A lapsed lease whose renewal waits for the row (lapsed_lease_free)
        is left out after the lapsed range is read, so its try-lock runs for `limit` rows at
        most."""

        rows = WorkflowInstance.objects.using(self.alias).filter(
            functools.reduce(operator.or_, (Q(workflow=n, version=v) for n, v in workflows))
        )
        if queues is not None:
            rows = rows.filter(queue__in=queues)
        if where[0]:
            rows = rows.filter(Exact(RawSQL(*where, output_field=BooleanField()), True))
        fields: tuple[str, ...] = ("id", "workflow", "concurrency_key", "rate_limit_key")
        if flag is not None:
            rows = rows.annotate(full_key=RawSQL(*flag, output_field=BooleanField()))
            fields += ("full_key",)
        if self.has_skip_locked:
            rows = rows.select_for_update(skip_locked=True)
        columns = (*fields, *CLAIM_ORDER)
        free = Q(wake_at__lte=now, lease_until__isnull=True, parked=False)
        lapsed = Q(wake_at__lte=now, lease_until__lt=now)
        found = list(rows.filter(free).order_by(*CLAIM_ORDER).values_list(*columns)[:limit])
        # Most claims find no lapsed lease: a look at dw_instance_leased first spares them the
        # second scan's statement (under limits, one with every full key in it).
        late: list[tuple[Any, ...]] = []
        if WorkflowInstance.objects.using(self.alias).filter(lapsed).exists():
            late = list(rows.filter(lapsed).order_by(*CLAIM_ORDER).values_list(*columns)[:limit])
        if late and self.has_advisory_locks:
            takeable = set(
                WorkflowInstance.objects.using(self.alias)
                .filter(self.lapsed_lease_free(), pk__in=[row[0] for row in late])
                .values_list("id", flat=True)
            )
            late = [row for row in late if row[0] in takeable]
        merged = sorted(found + late, key=lambda row: row[len(fields) :])
        return [row[: len(fields)] for row in merged[:limit]]

    def lease(
        self, ids: list[str], *, token: str, owner: str, lease_until: Any, now: Any
    ) -> tuple[list[Any], int]:
        """Inside a claim's transaction: lease the candidates `ids` it picked, if still due and
        free: (the instances in claim order, the last signal id). The conditions again, in the
        UPDATE itself: where the database cannot skip locked rows (SQLite) this is what keeps
        two claims from leasing one instance."""

        rows = WorkflowInstance.objects.using(self.alias)
        due = Q(wake_at__lte=now) & (
            Q(lease_until__isnull=True) | (Q(lease_until__lt=now) & self.lapsed_lease_free())
        )
        rows.filter(due, pk__in=ids).update(
            lease_token=token,
            lease_owner=owner,
            lease_until=lease_until,
            runs=F("runs") + 1,
            updated_at=now,
            status=Case(
                When(status=Status.COMPENSATING, then=Value(Status.COMPENSATING)),
                default=Value(Status.RUNNING),
            ),
        )
        claimed = rows.filter(lease_token=token, pk__in=ids).order_by(*CLAIM_ORDER)
        return list(claimed), self.last_signal_id()

    def last_signal_id(self) -> int:
        """The newest signal's id, 0 before the first: what an instance started or claimed now
        has seen. By hand: the ORM's aggregate() built its query again at every start() and
        claim (about a tenth of a start()'s CPU)."""
        with self.connection.cursor() as cursor:
            cursor.execute(self._last_signal_sql)
            return int(cursor.fetchone()[0] or 0)

    def start_alone(self, instance: WorkflowInstance) -> bool:
        """Insert a started instance unless its id exists, outside any transaction (inside the
        caller's too where starts_alone_in_transactions), and wake the workers of other
        processes when it is new; returns whether it inserted. One statement (started_row()),
        committed on its own, where a transaction took four round trips; PostgreSQL notifies
        in it too. For store.instances.start_alone()."""
        sql, params = self.started_row(instance)
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            created = cursor.rowcount == 1
        if created:
            self.notify()
        return created

    def started_row(self, instance: WorkflowInstance) -> tuple[str, list[Any]]:
        """start_alone()'s INSERT of `instance` unless its id exists, and its parameters: its
        signal cursor is the newest signal's id, read by a subquery."""
        sql, cursor_index = self._started_sql
        params = row_values(instance, self.connection)
        del params[cursor_index]
        return sql, params

    @functools.cached_property
    def _started_sql(self) -> tuple[str, int]:
        return insert_with(
            WorkflowInstance, "signal_cursor", f"({self._last_signal_sql})", self.connection
        )

    @functools.cached_property
    def _last_signal_sql(self) -> str:
        meta = Signal._meta
        name = self.connection.ops.quote_name
        return f"SELECT COALESCE(MAX({name(str(meta.pk.column))}), 0) FROM {name(meta.db_table)}"

    def write(
        self, id: str, token: str, write: InstanceWrite, ride: Ride | None = None
    ) -> Written | None:
        """The lease holder's write (its payloads encoded), all or nothing, only while `token`
        is the instance's lease token: the flags as stored, or None (having written nothing)
        when the lease is gone. The ORM's statements, in one transaction that locks the row by
        its lease token first. `ride`: nothing rides here (see Ride)."""

        with self.write_transaction():
            self.take_write_lock()
            if write.signal is not None:
                self.lock_signals(shared=False)
            elif write.release is not None and (write.release.waits or write.release.had_waits):
                # Shared with the other writes, exclusive with signals: a signal's wake-up and a
                # write that registers or clears waits never interleave (nor deadlock on MySQL).
                self.lock_signals(shared=True)
            held = WorkflowInstance.objects.using(self.alias).filter(pk=id, lease_token=token)
            row = (
                held.select_for_update()
                .values_list(
                    "cancel_requested",
                    "terminate_requested",
                    "cancel_reason",
                    "awaited",
                    "created_at",
                    "workflow",
                    "concurrency_key",
                )
                .first()
            )
            if row is None:
                return None
            cancel_requested, terminate_requested, reason, awaited, created_at, workflow, key = row
            entries = dict(write.entries)
            if not (cancel_requested or terminate_requested):
                entries.update(write.guarded_entries)
            journal = JournalEntry.objects.using(self.alias)
            if write.restart:
                journal.filter(instance_id=id)._raw_delete(self.alias)
            if write.attributes:
                self.write_attributes(id, write.attributes, created_at)
            if entries:
                journal.bulk_create(
                    [JournalEntry(instance_id=id, name=n, document=d) for n, d in entries.items()],
                    **self.upsert_kwargs(["instance", "name"], ["document"]),
                )
            changes = dict(write.changes)
            if write.signal is not None:
                self.record_signal(**write.signal, now=write.now)
            release = write.release
            if release is not None:
                if release.had_waits:
                    Wait.objects.using(self.alias).filter(instance_id=id)._raw_delete(self.alias)
                if release.waits:
                    Wait.objects.using(self.alias).bulk_create(
                        [Wait(instance_id=id, signal=s, key=k) for s, k in release.waits]
                    )
                wake_at = release.wake_at
                status = changes.get("status")
                if status in FINISHED:
                    wake_at = None
                elif not release.hold and (
                    (cancel_requested and status == Status.SUSPENDED)
                    or self._signal_arrived(release.waits, release.signal_cursor)
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
                self.unpark_key(workflow, key)
            if awaited and (write.announce or changes.get("status") in FINISHED):
                self.notify_ended(id)
            return Written(cancel_requested, terminate_requested, reason)

    def _signal_arrived(self, waits: list[tuple[str, str | None]], cursor: int) -> bool:
        """Whether a signal after `cursor` (the execution's signal cursor) matches one of the
        `waits` the write registers."""
        if not waits:
            return False
        matches = functools.reduce(
            operator.or_,
            (Q(name=s, key=k) if k is not None else Q(name=s, key__isnull=True) for s, k in waits),
        )
        signals = Signal.objects.using(self.alias)
        return bool(signals.filter(matches, id__gt=cursor).exists())

    def write_attributes(self, id: str, changes: dict[str, Stored | None], created_at: Any) -> None:
        """Set (upsert) or, for None, remove search attributes of instance `id`, created at
        `created_at`, inside the lease holder's write."""
        removed = [name for name, value in changes.items() if value is None]
        kept = {name: value for name, value in changes.items() if value is not None}
        if removed:
            rows = InstanceAttribute.objects.using(self.alias).filter(
                instance_id=id, name__in=removed
            )
            rows._raw_delete(self.alias)
        if kept:
            InstanceAttribute.objects.using(self.alias).bulk_create(
                [attribute_row(id, name, value, created_at) for name, value in kept.items()],
                **self.upsert_kwargs(["instance", "name"], list(ATTRIBUTE_COLUMNS)),
            )

    def unpark_key(self, workflow: str, key: str) -> int:
        """A lease of (workflow, key) ended, in this transaction, after the lease holder's row
        was locked: put back the key's parked instances (store/parking.py). How many."""
        rows = WorkflowInstance.objects.using(self.alias)
        return int(
            rows.filter(workflow=workflow, concurrency_key=key, parked=True).update(parked=False)
        )

    def record_signal(
        self, *, name: str, key: str | None, dedupe_id: str | None, payload: Any, now: Any
    ) -> tuple[int, int, bool, str | None]:
        """Under the exclusive signal lock the caller holds: store a signal under the next id
        and make due every suspended instance waiting for it: (its id, how many woken, whether
        it is new, its key). A `dedupe_id` sent before returns that signal (WorkflowIdConflictError
        if its key differs). A payload the codec seals is bound to the row's id, so it is
        written after the INSERT gave it one; any other goes in with it (insert_signal())."""
        if dedupe_id is not None:
            # A locking read: on MySQL it sees rows committed after the transaction's snapshot.
            earlier = (
                Signal.objects.using(self.alias)
                .select_for_update()
                .filter(name=name, dedupe_id=dedupe_id)
                .values_list("id", "key")
                .first()
            )
            if earlier is not None:
                if earlier[1] != key:
                    raise signal_id_conflict(name, dedupe_id, earlier[1], key)
                return earlier[0], 0, False, earlier[1]
        signal = Signal(name=name, key=key, dedupe_id=dedupe_id, created_at=now)
        if not payloads.seals_signal(payload):
            stored = payloads.encode_signal(signal, payload)
            id, woken = self.insert_signal(
                name=name, key=key, dedupe_id=dedupe_id, payload=stored, now=now
            )
            return id, woken, True, key
        signal.save(using=self.alias, force_insert=True)
        signal.payload = payloads.encode_signal(signal, payload)
        Signal.objects.using(self.alias).filter(pk=signal.pk).update(payload=signal.payload)
        return signal.id, self.wake_waiters(name=name, key=key, now=now), True, key

    def signal_by_routine(
        self, *, name: str, key: str | None, dedupe_id: str | None, payload: Any, now: Any
    ) -> tuple[int, int, bool, str | None] | None:
        """record_signal() in one call of the database's own routine, which takes the signal
        lock and wakes the workers of other processes when the signal is new: record_signal()'s
        four values. Outside any transaction, or inside the caller's where the routine does
        not commit; None where the database has no such routine, or none it can call here
        (asked before the payload is encoded). `payload` as given, never one a codec seals
        (routine_payload())."""
        return None

    def routine_payload(self, *, name: str, key: str | None, now: Any, payload: Any) -> Any:
        """A signal's `payload`, never one a codec seals, as its routine takes it: encoded
        (payloads.encode_signal()) and prepared for the column."""
        stored = payloads.encode_signal(Signal(name=name, key=key, created_at=now), payload)
        return Signal._meta.get_field("payload").get_db_prep_save(stored, self.connection)

    def insert_signal(
        self, *, name: str, key: str | None, dedupe_id: str | None, payload: Any, now: Any
    ) -> tuple[int, int]:
        """Insert a signal with `payload` as stored and make due its waiters (wake_waiters()),
        under the exclusive signal lock the caller holds: (the signal's id, how many woken)."""
        signal = Signal(name=name, key=key, dedupe_id=dedupe_id, payload=payload, created_at=now)
        signal.save(using=self.alias, force_insert=True)
        return signal.id, self.wake_waiters(name=name, key=key, now=now)

    def delete_instances(self, ids: list[str]) -> int:
        """Delete the instances `ids` and every row that points at them (journal, waits, tags,
        attributes, streams) without a cascade collector, the dependents first: how many instances.
        A thousand ids at a time (with ten thousand in one list PostgreSQL read the whole
        instance table, 0.34 s of a purge batch with 1,060,000 rows)."""
        deleted = 0
        for start in range(0, len(ids), DELETE_CHUNK):
            chunk = ids[start : start + DELETE_CHUNK]
            for dependents in (
                JournalEntry.objects.using(self.alias),
                Wait.objects.using(self.alias),
                InstanceTag.objects.using(self.alias),
                InstanceAttribute.objects.using(self.alias),
                WorkflowStreamItem.objects.using(self.alias),
                WorkflowStream.objects.using(self.alias),
            ):
                dependents.filter(instance_id__in=chunk)._raw_delete(self.alias)
            rows = WorkflowInstance.objects.using(self.alias).filter(pk__in=chunk)
            deleted += rows._raw_delete(self.alias)
        return deleted

    def wake_waiters(self, *, name: str, key: str | None, now: Any) -> Any:
        """Make due now (or keep an earlier wake time) every suspended instance with a wait
        registered for signal `name` with exactly `key`: how many. One hand-written UPDATE with
        a subquery on the waits, written once per database and kind of key: the ORM's, its CASE
        and filters built again at every signal(), made a signal cost 1.0 ms of CPU on SQLite
        against 0.3 ms (benchmarks/start_cpu.py)."""
        keyed = key is not None
        sql = _WAKE_WAITERS.get((self.connection.vendor, keyed))
        if sql is None:
            sql = _WAKE_WAITERS[self.connection.vendor, keyed] = _wake_waiters_sql(
                self.connection, keyed
            )
        at = self.connection.ops.adapt_datetimefield_value(now)
        with self.connection.cursor() as cursor:
            cursor.execute(
                sql, [at, at, at, Status.SUSPENDED.value, name, *([key] if keyed else [])]
            )
            return cursor.rowcount

    def listed_queues(self, limit: int) -> list[str]:
        """Up to `limit` queues, sorted, for the admin's queue filter: those of the instances
        with a wake time, read from the partial claim index dw_instance_queue_due, which holds
        only those (never from the finished instances)."""
        rows = WorkflowInstance.objects.using(self.alias).filter(wake_at__isnull=False)
        queues = rows.order_by("queue").values_list("queue", flat=True).distinct()
        return list(queues[:limit])

    def index_hint(self, index: str) -> str:
        """What follows a table's name in a hand-written SELECT to read it by `index`: "" where
        the planner finds the index itself."""
        return ""

    def listed_fair_keys(self, limit: int) -> list[str]:
        """Up to `limit` fair keys, sorted, for the admin's filter by key: read from
        dw_instance_fair, which holds the keyed instances only."""
        rows = WorkflowInstance.objects.using(self.alias).filter(fair_key__isnull=False)
        keys = rows.order_by("fair_key").values_list("fair_key", flat=True).distinct()
        return [key for key in keys[:limit] if key is not None]

    def first_rows(self) -> AbstractContextManager[Any]:
        """A context whose SELECTs are planned for their first rows: an ORDER BY ... LIMIT
        over a join (a filter's EXISTS) may read its first table in that order and stop at the
        limit. Nothing here: the planner weighs that by itself."""
        return contextlib.nullcontext()

    def due_ranges(self, rows: QuerySet[Any], queues: list[str] | None) -> QuerySet[Any]:
        """`rows`, the due instances (wake_at <= now, no lease or a lapsed one), of `queues`
        (None: all), with what makes the database read them from the claim indexes: only the
        queues here, where those indexes are partial (they hold the due instances only)."""
        return rows if queues is None else rows.filter(queue__in=queues)

    # Transactions and statements.

    def read_committed_next(self) -> None:
        """Outside a transaction, run the next one under READ COMMITTED, whatever the
        session's level, where the default level is stricter (MySQL, MariaDB)."""

    def transaction_isolation(self) -> str | None:
        """The isolation level of the current transaction where the store relies on it
        (PostgreSQL), else None."""
        return None

    def max_allowed_packet(self) -> int | None:
        """The largest statement the server takes, where that limits a value (MySQL,
        MariaDB); None elsewhere."""
        return None

    def is_deadlock(self, error: BaseException) -> bool:
        """Whether the database broke a deadlock by rolling this transaction back."""
        return False

    def transaction_aborted(self) -> bool:
        """Whether the server aborted the alias's open transaction after a failed statement,
        as PostgreSQL does (every statement then fails until the rollback)."""
        return False

    # Waking other processes.

    def notify(self) -> None:
        """Wake the workers of other processes when the transaction commits: without
        notifications, by counting it in a WakeupCounter row, which idle workers read every
        WORKER['WAKEUP_INTERVAL'] (wakeup_mark()). Where rows have locks of their own
        (counts_wakeups_after_commit), the count runs after the commit, once per transaction,
        in a statement of its own: inside the caller's transaction its row lock would be held
        until that commits, and two business transactions that each lock an order row and
        start a workflow, in opposite orders, would deadlock on it."""
        if not (self.counts_wakeups_after_commit and self.connection.in_atomic_block):
            self.count_wakeup()
            return
        pending = (entry[1] for entry in self.connection.run_on_commit)
        if self.count_wakeup not in pending:  # once per transaction
            transaction.on_commit(self.count_wakeup, using=self.alias, robust=True)

    def count_wakeup(self) -> None:
        """Add one to this thread's WakeupCounter row. A thread always counts in the same row,
        so a transaction that counts takes one counter lock, never two in an order another
        transaction could reverse."""
        shard = self.wakeup_shard()
        # One plain statement, written once: every start and signal sends it.
        with self.connection.cursor() as cursor:
            cursor.execute(self.count_wakeup_sql, [shard])
            if cursor.rowcount:
                return
            # The row's first count (or the first since a flush); if another thread's first
            # count inserted it meanwhile, count in it.
            if not self.insert_ignore(WakeupCounter(shard=shard, count=1)):
                cursor.execute(self.count_wakeup_sql, [shard])

    def wakeup_shard(self) -> int:
        """This thread's WakeupCounter row (count_wakeup())."""
        if not hasattr(_thread, "seed"):
            _thread.seed = random.randrange(1 << 16)
        return int(_thread.seed % self.wakeup_shards)

    @functools.cached_property
    def count_wakeup_sql(self) -> str:
        quote = self.connection.ops.quote_name
        table, count, shard = (quote(WakeupCounter._meta.db_table), quote("count"), quote("shard"))
        return f"UPDATE {table} SET {count} = {count} + 1 WHERE {shard} = %s"

    def wakeup_mark(self) -> Any:
        """A value that changes whenever a start or signal commits in any process (notify()):
        the sum of the wake-up counts, one primary-key range read of a few rows. Read it
        outside a transaction, for a fresh snapshot each time."""
        return WakeupCounter.objects.using(self.alias).aggregate(total=Sum("count"))["total"]

    def notify_ended(self, instance_id: str) -> None:
        """Wake result() waiting in other processes for `instance_id`, at the commit."""

    def listen(
        self,
        wake: Callable[[str], None],
        stop: threading.Event,
        channel: str = NOTIFY_CHANNEL,
    ) -> None:
        """Call `wake(payload)` for every notification on `channel` until `stop` is set; returns
        at once where the database has none (has_listen_notify)."""

    # Schema.

    def create_lock_rows(self) -> None:
        """After migrate (and a test database's flush): the lock rows that lockers expect to
        find, where signals and name locks lock rows of the StoreLock table (MySQL, MariaDB)."""


def signal_id_conflict(
    name: str, dedupe_id: str | None, earlier: str | None, key: str | None
) -> WorkflowIdConflictError:
    """The error of a signal sent again with the dedupe id of one sent with another key."""
    return WorkflowIdConflictError(
        f"Signal {name!r} with id {dedupe_id!r} was sent before with key {earlier!r}, not {key!r}."
    )


def _wake_waiters_sql(connection: Any, keyed: bool) -> str:
    """Backend.wake_waiters()'s UPDATE on `connection`'s database, for a key (`keyed`) or
    none: its parameters are the wake time thrice, the status, the signal's name, the key."""
    instances = WorkflowInstance._meta
    waits = Wait._meta
    quote = connection.ops.quote_name

    def column(meta: Any, name: str) -> str:
        return str(quote(meta.get_field(name).column))

    wake_at, key_column = column(instances, "wake_at"), column(waits, "key")
    match = f"{key_column} = %s" if keyed else f"{key_column} IS NULL"
    return (
        f"UPDATE {quote(instances.db_table)} SET {wake_at} = CASE WHEN {wake_at} IS NULL "
        f"OR {wake_at} > %s THEN %s ELSE {wake_at} END, "
        f"{column(instances, 'updated_at')} = %s "
        f"WHERE {column(instances, 'status')} = %s AND {column(instances, 'id')} IN "
        f"(SELECT {column(waits, 'instance')} FROM {quote(waits.db_table)} "
        f"WHERE {column(waits, 'signal')} = %s AND {match})"
    )
