"""SQLite: one writer at a time for the whole file, the store's transactions taking the
database's write lock first; the ORM's generic paths for everything else."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import django
from django.core.checks import CheckMessage, Warning
from django.db import OperationalError, transaction
from django.db.models.constants import OnConflict

from ...models import (
    FINISHED,
    JournalEntry,
    Signal,
    Status,
    StoreLock,
    WakeupCounter,
    WorkflowInstance,
)
from .base import Backend, Written
from .groupcommit import GroupCommit
from .params import plain_kind, prepared
from .rows import INSTANCE_COLUMNS
from .writes import UNSET, fast_writable, unpark_statement, write_changes

if TYPE_CHECKING:
    from .writes import ClaimRequest, InstanceWrite, Ride

_FLAGS = ("cancel_requested", "terminate_requested", "cancel_reason", "awaited")
"""What a lease holder's write reads back, in this order (write())."""

_FLAG_SET = frozenset(_FLAGS)

_DOCUMENT: Any = JournalEntry._meta.get_field("document")

logger = logging.getLogger("django_workflows")


class SQLiteBackend(Backend):
    """SQLite: its database lock orders signals, limits and every write; no row locks, no
    SKIP LOCKED, no notifications."""

    serializes_writes = True
    wakeup_shards = 1  # one writer at a time anyway

    def __init__(self, alias: str) -> None:
        super().__init__(alias)
        self._seen = threading.local()  # each thread's last data_version and mark
        self._writer = threading.Lock()  # the process's turn to write (write_transaction)
        self._group = GroupCommit(alias, self._turn)  # the lease holders' writes (write())
        self._statements: dict[Any, Any] = {}  # write()'s statements, built once each
        self._flags_sql = (
            f"SELECT {', '.join(_FLAGS)} FROM {WorkflowInstance._meta.db_table} "
            f"WHERE id = %s AND lease_token = %s"
        )

    def wakeup_mark(self) -> Any:
        """The wake-up counts and the instance table's last rowid, read only when another
        connection committed to the file since this thread's last look (PRAGMA data_version,
        an in-memory check of the WAL index): an idle worker's look costs no read of the
        database at all. A start outside a transaction counts no wake-up here: its INSERT
        moves the last rowid on (start_alone()). SQLite gives a new row the greatest rowid
        plus one: only the newest instances deleted (or the rows renumbered by a VACUUM) and
        as many started within one look's interval would go unseen, until the worker's poll."""
        with self.connection.cursor() as cursor:
            cursor.execute("PRAGMA data_version")
            version = cursor.fetchone()[0]
            seen = self._seen
            raw = self.connection.connection  # a new connection counts anew
            committed = getattr(seen, "version", None) != version  # by another connection
            if committed or getattr(seen, "connection", None) is not raw:
                cursor.execute(self._mark_sql)
                seen.mark = tuple(cursor.fetchone())
                seen.version = version
                seen.connection = raw
        return seen.mark

    @functools.cached_property
    def _mark_sql(self) -> str:
        return (
            f"SELECT (SELECT SUM(count) FROM {WakeupCounter._meta.db_table}), "
            f"(SELECT MAX(rowid) FROM {WorkflowInstance._meta.db_table})"
        )

    @contextlib.contextmanager
    def write_transaction(self, *, savepoint: bool = True) -> Iterator[None]:
        """A store transaction that first waits for this process's turn to write.

        SQLite lets one connection write at a time, and a connection that finds the write lock
        taken sleeps in SQLite's busy handler, in growing steps (up to 100 ms) whatever the
        moment the lock is released: with the worker's threads all writing, they spent most of
        their time asleep there (docs/discussions/performance.md). Queued on a lock of the
        process, a thread starts the moment the previous one commits. Its wait is bounded by the
        busy timeout too (OPTIONS["timeout"], 5 s by default), and then fails as SQLite would.
        A transaction nested in one already open is that one's (a savepoint): it waits for
        nothing.
        """
        if self.connection.in_atomic_block:
            with transaction.atomic(using=self.alias, savepoint=savepoint):
                yield
            return
        with self._turn(), transaction.atomic(using=self.alias, savepoint=savepoint):
            yield

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """This process's turn to write, waited for up to the busy timeout (OPTIONS["timeout"],
        5 s by default); then "database is locked", as SQLite would say."""
        timeout = float(self.connection.settings_dict.get("OPTIONS", {}).get("timeout", 5))
        if not self._writer.acquire(timeout=timeout):
            raise OperationalError(
                f"database is locked: no turn to write on {self.alias!r} within the busy "
                f"timeout ({timeout:g} s) while another thread of this process wrote"
            )
        try:
            yield
        finally:
            self._writer.release()

    def start_alone(self, instance: WorkflowInstance) -> bool:
        """The INSERT alone, committed on its own at this process's turn to write. It counts
        no wake-up: the watchers see its row by the instance table's last rowid
        (wakeup_mark()). Without the count's UPDATE and the transaction around the two, a
        start() takes 0.22-0.26 ms of the caller's CPU, against 0.27-0.36 ms, back to back
        (benchmarks/start_cpu.py)."""
        sql, params = self.started_row(instance)
        with self._turn(), self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount == 1

    def check(self) -> list[CheckMessage]:
        """W001: transactions that do not take the write lock at their start. W005: a database
        file not in WAL mode."""
        return self._check_transaction_mode() + self._check_journal_mode()

    def prepare_worker(self) -> None:
        """Switch a database file in SQLite's default journal mode (DELETE, the rollback
        journal) to WAL, which the file keeps: the web processes' connections use it from their
        next transaction too. A mode somebody chose (TRUNCATE, PERSIST, MEMORY, OFF) is left
        as it is, and so is `synchronous`: WAL loses no commit the rollback journal would have
        kept.

        With Django's default SQLite options, a three-step workflow's commits each rewrote
        pages through the journal file and waited for the disk several times: one worker
        drained 150 workflows/s, against 396/s after the switch and 507/s with the documented
        set-up (docs/discussions/performance.md). A switch the file refuses (another
        connection holds a lock past the busy timeout, a file system without shared memory)
        is logged, and the worker goes on in the mode the file has; W005 says so too."""
        connection: Any = self.connection  # the SQLite DatabaseWrapper
        if connection.is_in_memory_db() or connection.in_atomic_block:
            return  # no file to switch; or a worker inside a test's transaction
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            mode = str(cursor.fetchone()[0]).lower()
            if mode != "delete":
                return
            try:
                cursor.execute("PRAGMA journal_mode=WAL")
                switched = str(cursor.fetchone()[0]).lower()
                why = f"the file stayed in journal mode {switched!r}"
            except OperationalError as error:
                switched, why = mode, str(error)
        if switched == "wal":
            logger.info("Switched the SQLite database %r to WAL mode.", self.alias)
            return
        logger.warning(
            "Could not switch the SQLite database %r to WAL mode (%s): the worker drains "
            "several times slower in journal mode %r. See the how-to guide 'Run the worker'.",
            self.alias,
            why,
            mode,
        )

    def _check_transaction_mode(self) -> list[CheckMessage]:
        mode = self.connection.settings_dict.get("OPTIONS", {}).get("transaction_mode")
        if django.VERSION < (5, 1) or mode == "IMMEDIATE":
            return []
        return [
            Warning(
                f"The workflow database {self.alias!r} is SQLite without "
                f'OPTIONS["transaction_mode"] = "IMMEDIATE": the worker\'s threads can then fail '
                f'with "database is locked" when two of them upgrade a read to a write at once.',
                hint='Set "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20}.',
                id="django_workflows.W001",
            )
        ]

    def write(
        self, id: str, token: str, write: InstanceWrite, ride: Ride | None = None
    ) -> Written | None:
        """Two or three statements in one transaction, at this process's turn to write,
        without the ORM's query building (which the one writer at a time would otherwise spend
        holding the database's write lock), each statement's text built once: read the flags
        by the lease token, upsert the journal entries (the guarded ones only while no cancel
        or terminate is requested), update. A write whose changes do not depend on the flags
        (no suspension's wake time) reads them in its UPDATE (RETURNING, SQLite 3.35+): one
        statement fewer, the same rows changed in the same transaction. A write that takes the
        signal lock, restarts the journal or sets search attributes (fast_writable) takes the
        generic body. Nothing rides here (`ride`: has_rides is False).

        Outside a transaction, the writes other threads queue meanwhile are made with it in
        one transaction (groupcommit.py): 3,000 three-step workflows in 7.0-8.0 s against
        9.8-10.1 s with Django's default options (synchronous FULL), in 4.9-5.6 s against
        6.1 s with the documented set-up (`runworkflows --once --concurrency 10`, back to
        back)."""
        if not fast_writable(write):
            return super().write(id, token, write, ride)
        if self.connection.in_atomic_block:  # inside the caller's transaction
            with self.write_transaction():
                return self._write(id, token, write)
        return self._group.run(lambda: self._write(id, token, write))

    def _write(self, id: str, token: str, write: InstanceWrite) -> Written | None:
        """write()'s statements, in the current transaction: on the connection of the thread
        that commits them, which is not always the thread that asked (groupcommit.py)."""
        connection = self.connection
        changes, wake_at = write_changes(write)
        returning = (
            wake_at is UNSET
            and bool(changes)
            and _FLAG_SET.isdisjoint(changes)
            and connection.features.can_return_columns_from_insert
        )
        with connection.cursor() as cursor:
            self._take_write_lock(connection)  # Django 4.2: the lock before a read
            if returning:
                sql, fields = self._update_sql(tuple(changes), returning=True)
                cursor.execute(sql, [*prepared(fields, changes, connection), id, token])
                rows = cursor.fetchall()
                row = rows[0] if rows else None
            else:
                cursor.execute(self._flags_sql, [id, token])
                row = cursor.fetchone()
            if row is None:
                return None
            cancel_requested, terminate_requested = bool(row[0]), bool(row[1])
            entries = dict(write.entries)
            if not (cancel_requested or terminate_requested):
                entries.update(write.guarded_entries)
            if entries:
                document = _DOCUMENT.get_db_prep_save
                cursor.execute(
                    self._journal_sql(len(entries)),
                    [
                        value
                        for name, entry in entries.items()
                        for value in (id, name, document(entry, connection))
                    ],
                )
            if not returning:
                if wake_at is not UNSET:
                    changes["wake_at"] = write.now if cancel_requested else wake_at
                if changes:
                    sql, fields = self._update_sql(tuple(changes), returning=False)
                    cursor.execute(sql, [*prepared(fields, changes, connection), id])
            unpark = unpark_statement(write, "parked")
            if unpark is not None:
                cursor.execute(*unpark)
            if row[3] and (write.announce or changes.get("status") in FINISHED):
                self.notify_ended(id)
            return Written(cancel_requested, terminate_requested, row[2])

    def _journal_sql(self, count: int) -> str:
        """The upsert of `count` journal entries of one instance (write())."""
        sql = self._statements.get(count)
        if sql is None:
            journal = JournalEntry._meta
            fields = [journal.get_field(name) for name in ("instance", "name", "document")]
            suffix = self.connection.ops.on_conflict_suffix_sql(
                fields, OnConflict.UPDATE, [_DOCUMENT.column], ["instance_id", "name"]
            )
            sql = self._statements[count] = (
                f"INSERT INTO {journal.db_table} (instance_id, name, document) VALUES "
                + ", ".join(["(%s, %s, %s)"] * count)
                + f" {suffix}"
            )
        return sql  # type: ignore[no-any-return]

    def _update_sql(self, names: tuple[str, ...], *, returning: bool) -> tuple[str, list[Any]]:
        """The UPDATE of the instance's columns `names` by its id, and their fields; with
        `returning`, only under the lease token, reading the flags back (write())."""
        key = (names, returning)
        built = self._statements.get(key)
        if built is None:
            instances = WorkflowInstance._meta
            fields = [instances.get_field(name) for name in names]
            sql = (
                f"UPDATE {instances.db_table} SET "
                + ", ".join(f"{field.column} = %s" for field in fields)  # type: ignore[union-attr]
                + " WHERE id = %s"
            )
            if returning:
                sql += f" AND lease_token = %s RETURNING {', '.join(_FLAGS)}"
            built = self._statements[key] = (sql, [(f, plain_kind(f)) for f in fields])
        return built  # type: ignore[no-any-return]

    def claim(
        self, request: ClaimRequest, pick: Callable[[], list[str]] | None = None
    ) -> tuple[list[Any], int]:
        """Without limits, four statements in one transaction, at this process's turn to
        write: pick the due candidates in claim order, lease them, read the last signal id and
        the leased rows back; the write lock, not row locks, keeps two claims from leasing one
        instance. Under limits (`pick`), the generic claim, with this backend's candidates'
        scan."""
        if pick is not None:
            return super().claim(request, pick)
        connection = self.connection
        table = WorkflowInstance._meta.db_table
        adapt = connection.ops.adapt_datetimefield_value
        claimable, filters = _claimable(request.workflows, request.queues)
        columns = "id, priority, wake_at, created_at"
        # Two ranges, as Backend.claim_candidates reads them: the free due instances from the
        # partial index dw_instance_due (no live lease in it), in its order, and the few whose
        # lease lapsed.
        select = (
            f"SELECT id FROM ("
            f"SELECT * FROM (SELECT {columns} FROM {table} WHERE wake_at <= %s "
            f"AND lease_until IS NULL AND NOT parked {claimable}"
            f"ORDER BY priority, wake_at, created_at, id LIMIT %s) "
            f"UNION ALL "
            f"SELECT * FROM (SELECT {columns} FROM {table} WHERE wake_at <= %s "
            f"AND lease_until < %s {claimable}"
            f"ORDER BY priority, wake_at, created_at, id LIMIT %s)"
            f") ORDER BY priority, wake_at, created_at, id LIMIT %s"
        )
        params = [
            adapt(request.now),
            *filters,
            request.limit,
            adapt(request.now),
            adapt(request.now),
            *filters,
            request.limit,
            request.limit,
        ]
        with self.write_transaction(), connection.cursor() as cursor:
            self._take_write_lock(connection)  # Django 4.2: the lock before a read
            cursor.execute(select, params)
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return [], 0
            marks = ", ".join(["%s"] * len(ids))
            cursor.execute(
                f"UPDATE {table} SET lease_token = %s, lease_owner = %s, lease_until = %s, "
                f"runs = runs + 1, updated_at = %s, "
                f"status = CASE WHEN status = %s THEN status ELSE %s END WHERE id IN ({marks})",
                [
                    request.token,
                    request.owner,
                    adapt(request.lease_until),
                    adapt(request.now),
                    Status.COMPENSATING,
                    Status.RUNNING,
                    *ids,
                ],
            )
            cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {Signal._meta.db_table}")
            last = int(cursor.fetchone()[0])
            cursor.execute(
                f"SELECT {INSTANCE_COLUMNS} FROM {table} WHERE lease_token = %s AND id IN "
                f"({marks}) ORDER BY priority, wake_at, created_at, id",
                [request.token, *ids],
            )
            claimed = self.rows.instances(connection, cursor.fetchall())
        return claimed, last

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
        """The candidates of a claim under limits, in claim order, as (id, workflow,
        concurrency_key, rate_limit_key) and `flag`'s value: the free due range from
        dw_instance_due, then (if a lease lapsed) the lapsed range, merged. By hand rather than
        by the ORM (Backend.claim_candidates) for the unary + of claim()'s: without statistics
        SQLite read the ORM's filter on the workflow by dw_instance_workflow, every instance
        the workflow ever had. Inside the claim's transaction, which holds the write lock."""
        connection = self.connection
        table = WorkflowInstance._meta.db_table
        at = connection.ops.adapt_datetimefield_value(now)
        columns = "id, workflow, concurrency_key, rate_limit_key" + (", full_key" if flag else "")
        selected = "id, workflow, concurrency_key, rate_limit_key" + (
            f", {flag[0]} AS full_key" if flag else ""
        )
        claimable, filters = _claimable(workflows, queues)
        condition = claimable + (f"AND {where[0]} " if where[0] else "")
        filters += where[1]
        order = "ORDER BY priority, wake_at, created_at, id"
        found: list[tuple[Any, ...]] = []
        with connection.cursor() as cursor:
            for lease, more in (
                ("lease_until IS NULL AND NOT parked", []),
                ("lease_until < %s", [at]),
            ):
                if more:  # the lapsed range, only once a lease lapsed (dw_instance_leased)
                    cursor.execute(
                        f"SELECT 1 FROM {table} WHERE wake_at <= %s AND lease_until < %s LIMIT 1",
                        [at, at],
                    )
                    if cursor.fetchone() is None:
                        break
                cursor.execute(
                    f"SELECT {selected}, priority, wake_at, created_at FROM {table} "
                    f"WHERE wake_at <= %s AND {lease} {condition}{order} LIMIT %s",
                    [*(flag[1] if flag else []), at, *more, *filters, limit],
                )
                found += [tuple(row) for row in cursor.fetchall()]
        width = len(columns.split(", "))
        found.sort(key=lambda row: (*row[width:], row[0]))  # the claim order, to the id
        return [row[:width] for row in found[:limit]]

    def _check_journal_mode(self) -> list[CheckMessage]:
        connection: Any = self.connection  # the SQLite DatabaseWrapper
        if connection.is_in_memory_db():
            return []  # one connection's database: nobody to share the file with
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            mode = str(cursor.fetchone()[0]).lower()
        if mode == "wal":
            return []
        if django.VERSION >= (5, 1):
            how = 'add "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL" to '
            how += "its OPTIONS"
        else:
            how = "run PRAGMA journal_mode=WAL and PRAGMA synchronous=NORMAL from a "
            how += "connection_created receiver"
        later = " runworkflows switches it to WAL when it starts." if mode == "delete" else ""
        return [
            Warning(
                f"The workflow database {self.alias!r} is SQLite in journal mode {mode!r}, not "
                f"WAL: every commit then waits for the disk and readers wait for writers, so the "
                f"worker drains several times slower and the web process's reads stall.{later}",
                hint=f"{how[0].upper()}{how[1:]} (see the how-to guide 'Run the worker').",
                id="django_workflows.W005",
            )
        ]

    def take_write_lock(self) -> None:
        """Take the database's write lock at the start of a store transaction.

        A deferred transaction that reads first and writes later fails at once with "database
        is locked" when another connection writes meanwhile (SQLite cannot wait there without
        risking a deadlock); taking the write lock first makes it wait for its turn (the busy
        timeout) instead. Django 5.1+ does this for every transaction with
        OPTIONS["transaction_mode"] = "IMMEDIATE", and then this is a no-op; on Django 4.2 it
        is how the worker's threads share the file.
        """
        self._take_write_lock(self.connection)

    def _take_write_lock(self, connection: Any) -> None:
        if not connection.in_atomic_block:
            return
        if connection.settings_dict.get("OPTIONS", {}).get("transaction_mode") == "IMMEDIATE":
            return
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {StoreLock._meta.db_table} SET name = name WHERE 1 = 0")

    def lock_signals(self, *, shared: bool) -> None:
        """One writer at a time: the database's write lock orders signals and suspensions."""
        self.take_write_lock()

    def lock_names(self, names: list[str]) -> None:
        """One writer at a time: the write lock the claim took orders claims under limits."""


def _claimable(workflows: list[tuple[str, int]], queues: list[str] | None) -> tuple[str, list[Any]]:
    """`AND ...`: a claim's queues and workflows, and its parameters. The unary + keeps
    SQLite's planner off dw_instance_workflow (workflow, version, status), which it prefers for
    the equalities: that index holds every instance the workflow ever had, finished ones
    included, and each claim then sorted all of them."""
    pairs = " OR ".join("(+workflow = %s AND +version = %s)" for _ in workflows)
    of_queues = f"AND queue IN ({', '.join(['%s'] * len(queues))}) " if queues is not None else ""
    return f"{of_queues}AND ({pairs}) ", [
        *(queues or []),
        *(value for pair in workflows for value in pair),
    ]
