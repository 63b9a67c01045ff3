"""The interface every database backend of the store implements, with the generic paths.

A backend is chosen once per database alias (store.backends.backend) and knows every statement
that differs between databases: the claim and the lease holder's fenced write by hand-written
SQL, the signal lock and the name locks, SQLite's write lock, upserts, NOTIFY/LISTEN, and the
lease lock of a renewal that waits for a row lock. This base class is also the backend of a
database with none of its own: the ORM's generic paths, and no lock beyond the rows' own.
"""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.core.checks import CheckMessage
from django.db import connections, transaction
from django.db.models import Field, Model, Q, Sum
from django.db.models.constants import OnConflict
from django.db.models.fields import AutoFieldMixin
from django.db.models.sql import InsertQuery

from .params import insert_rows_unless_exist, insert_unless_exists, row_values
from .prepared import Take, prepared_field, take_by_case

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

    from .writes import InstanceWrite, Ride

NOTIFY_CHANNEL = "django_workflows"
"""Where a start or signal wakes the workers of other processes (see Backend.notify)."""

ENDED_CHANNEL = "django_workflows_ended"
"""Where an instance's end wakes result() in other processes (see Backend.notify_ended)."""

_RELEASED = ("lease_token", "lease_owner", "lease_until")  # a schedule's lease, cleared

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
    """A lease holder's release can lease the next due instance in the same statement
    (fast_write with a Ride): a busy worker then needs few claims of its own (PostgreSQL)."""

    uses_lock_rows = False
    """Signals and name locks lock rows of the StoreLock table (MySQL, MariaDB)."""

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

    def __init__(self, alias: str) -> None:
        self.alias = alias

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
        model = apps.get_model("django_workflows", "WorkflowSchedule")
        meta, connection = model._meta, self.connection
        name = connection.ops.quote_name
        id, state, wake_at = meta.pk, meta.get_field("state"), meta.get_field("wake_at")
        ids = [id.get_db_prep_value(row[0], connection) for row in writes]
        states: list[Any] = []
        wakes: list[Any] = []
        for key, (_, value, at) in zip(ids, writes, strict=True):
            states += [key, state.get_db_prep_save(value, connection)]
            wakes += [key, wake_at.get_db_prep_save(at, connection)]
        json_when = f"WHEN %s THEN {self.json_parameter} " * len(writes)
        time_when = f"WHEN %s THEN {self.datetime_parameter} " * len(writes)

        def quoted(field_name: str) -> str:
            field = meta.get_field(field_name)
            assert isinstance(field, Field) and field.column is not None
            return str(name(field.column))

        names = ("id", "state", "wake_at", "updated_at", "revision", *_RELEASED)
        column = {f: quoted(f) for f in names}
        sql = (
            f"UPDATE {name(meta.db_table)} SET "
            f"{column['state']} = CASE {column['id']} {json_when}END, "
            f"{column['wake_at']} = CASE {column['id']} {time_when}END, "
            f"{column['updated_at']} = %s, "
            f"{column['revision']} = {column['revision']} + 1, "
            + ", ".join(f"{column[f]} = NULL" for f in _RELEASED)
            + f" WHERE {column['id']} IN ({', '.join(['%s'] * len(ids))}) "
            f"AND {column['lease_token']} = %s"
        )
        updated = meta.get_field("updated_at").get_db_prep_save(now, connection)
        with connection.cursor() as cursor:
            cursor.execute(sql, [*states, *wakes, updated, *ids, token])
            return cursor.rowcount

    # Occurrences prepared ahead (prepared.py): their values made ready before the write.
    def prepare_take(
        self, id: str, revision: int, own: str, state: Any, wake_at: Any, created_at: Any
    ) -> Any:
        schedule = apps.get_model("django_workflows", "WorkflowSchedule")
        return (
            prepared_field(self.connection, schedule, "state", state),
            prepared_field(self.connection, schedule, "wake_at", wake_at),
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

    # Hand-written fast paths: NotImplemented where the store takes the ORM's path.

    def claim_candidates(
        self,
        *,
        now: Any,
        limit: int,
        workflows: list[tuple[str, int]],
        where: tuple[str, list[Any]] = ("", []),
        queues: list[str] | None = None,
        flag: tuple[str, list[Any]] | None = None,
    ) -> Any:
        """The candidates of a claim under limits, locked, in claim order: rows (id, workflow,
        concurrency_key, rate_limit_key), with `flag`'s value last when given; NotImplemented
        where the ORM's query finds them (`where`: a
        condition's SQL and its parameters; `flag`: a boolean expression's, whether the row's
        key is full; `queues`: only those queues' instances, None for every queue)."""
        return NotImplemented

    def lease(self, ids: list[str], *, token: str, owner: str, lease_until: Any, now: Any) -> Any:
        """Inside a claim under limits: lease the candidates `ids` it picked, if still due and
        free, by hand-written SQL: (the instances in claim order, the last signal id), or
        NotImplemented where the ORM's statements do it."""
        return NotImplemented

    def fast_claim(
        self,
        *,
        owner: str,
        token: str,
        now: Any,
        lease_until: Any,
        limit: int,
        workflows: list[tuple[str, int]],
        queues: list[str] | None = None,
    ) -> Any:
        """A claim without limits by hand-written SQL, leasing up to `limit` due instances of
        `workflows` (in `queues`, sorted; None: every queue) to `owner` with `token` until
        `lease_until`: (instances, last signal id), or NotImplemented."""
        return NotImplemented

    def fast_write(
        self, id: str, token: str, write: InstanceWrite, ride: Ride | None = None
    ) -> Any:
        """The lease holder's write by hand-written SQL, when it needs no signal lock (it
        records no signal and registers or clears no waits): lock the row by its lease token,
        upsert the journal entries, change the instance, return the flags (None: the lease is
        gone). NotImplemented where the store takes the general path. With `ride`, a release
        may also lease the next due instance in the same statement (where the backend can):
        the flags are then followed by (the leased instances, the last signal id)."""
        return NotImplemented

    def delete_instances(self, ids: list[str]) -> Any:
        """Delete the instances `ids` and every row that points at them (journal, waits, tags,
        attributes) without a cascade collector: how many instances, or NotImplemented where
        the ORM's deletes do it."""
        return NotImplemented

    def insert_signal(
        self, *, name: str, key: str | None, dedupe_id: str | None, payload: Any, now: Any
    ) -> Any:
        """Insert a signal with `payload` as stored and make due its waiters as wake_waiters()
        does, under the exclusive signal lock the caller holds: (the signal's id, how many
        woken), or NotImplemented where the ORM's INSERT and wake_waiters() do it."""
        return NotImplemented

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
            # "suspended": Status.SUSPENDED (the models import this module)
            cursor.execute(sql, [at, at, at, "suspended", name, *([key] if keyed else [])])
            return cursor.rowcount

    def listed_queues(self, limit: int) -> list[str]:
        """Up to `limit` queues, sorted, for the admin's queue filter: those of the instances
        with a wake time, read from the partial claim index dw_instance_queue_due, which holds
        only those (never from the finished instances)."""
        model = apps.get_model("django_workflows", "WorkflowInstance")  # models import this module
        rows = model.objects.using(self.alias).filter(wake_at__isnull=False)
        queues = rows.order_by("queue").values_list("queue", flat=True).distinct()
        return list(queues[:limit])

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
        seed = getattr(_thread, "seed", None)
        if seed is None:
            seed = _thread.seed = random.randrange(1 << 16)
        shard = seed % self.wakeup_shards
        # One plain statement, written once: every start and signal sends it.
        with self.connection.cursor() as cursor:
            cursor.execute(self._count_wakeup_sql, [shard])
            if cursor.rowcount:
                return
            # The row's first count (or the first since a flush); if another thread's first
            # count inserted it meanwhile, count in it.
            model = apps.get_model("django_workflows", "WakeupCounter")
            if not self.insert_ignore(model(shard=shard, count=1)):
                cursor.execute(self._count_wakeup_sql, [shard])

    @functools.cached_property
    def _count_wakeup_sql(self) -> str:
        model = apps.get_model("django_workflows", "WakeupCounter")  # models import this module
        quote = self.connection.ops.quote_name
        table, count, shard = (quote(model._meta.db_table), quote("count"), quote("shard"))
        return f"UPDATE {table} SET {count} = {count} + 1 WHERE {shard} = %s"

    def wakeup_mark(self) -> Any:
        """A value that changes whenever a start or signal commits in any process (notify()):
        the sum of the wake-up counts, one primary-key range read of a few rows. Read it
        outside a transaction, for a fresh snapshot each time."""
        model = apps.get_model("django_workflows", "WakeupCounter")
        return model.objects.using(self.alias).aggregate(total=Sum("count"))["total"]

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
        find (uses_lock_rows)."""


def insert(obj: Model, using: str, on_conflict: OnConflict, update_fields: list[Any]) -> int:
    """INSERT `obj` with the ORM's statement for `on_conflict`; returns the rows inserted."""
    return insert_rows([obj], using, on_conflict, update_fields)


def insert_rows(
    objs: Sequence[Model], using: str, on_conflict: OnConflict, update_fields: list[Any]
) -> int:
    """INSERT `objs` (of one model, with the same fields set) with the ORM's statement for
    `on_conflict`; returns the rows inserted."""
    first = objs[0]
    model = type(first)
    fields = [
        f
        for f in model._meta.local_concrete_fields
        if not getattr(f, "generated", False)
        and not (isinstance(f, AutoFieldMixin) and getattr(first, f.attname) is None)
    ]
    connection = connections[using]
    size = max(1, connection.ops.bulk_batch_size(fields, objs))  # the database's parameter limit
    inserted = 0
    with connection.cursor() as cursor:
        for first_row in range(0, len(objs), size):
            query = InsertQuery(model, on_conflict=on_conflict, update_fields=update_fields)
            query.insert_values(fields, list(objs[first_row : first_row + size]))
            for sql, values in query.get_compiler(using=using).as_sql():
                cursor.execute(sql, values)
                inserted += max(cursor.rowcount, 0)
    return inserted


def _wake_waiters_sql(connection: Any, keyed: bool) -> str:
    """Backend.wake_waiters()'s UPDATE on `connection`'s database, for a key (`keyed`) or
    none: its parameters are the wake time thrice, the status, the signal's name, the key."""
    instances = apps.get_model("django_workflows", "WorkflowInstance")._meta
    waits = apps.get_model("django_workflows", "Wait")._meta
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
