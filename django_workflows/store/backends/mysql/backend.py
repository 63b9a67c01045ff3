"""MySQL and MariaDB: lock rows for signals and limits, and the claim and the lease holder's
write by hand-written SQL in one transaction each. Their differences (the exact collation,
SKIP LOCKED's first version) are read from the server once."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.core.checks import CheckMessage, Error
from django.db import DatabaseError, router
from django.db.models import Model, QuerySet
from django.db.models.constants import OnConflict

from ....models import Status, StoreLock, Wait, WorkflowInstance
from ..ahead import Take
from ..base import Backend, Written
from ..inserts import insert
from ..writes import UNSET, fast_writable, journal_rows, write_changes
from . import ahead as prepared_sql
from . import (
    batches as mysql_batches,
)
from . import (
    claims as mysql_claims,
)
from . import (
    collations as mysql_collations,
)
from . import (
    deletes as mysql_deletes,
)
from . import (
    procedures as mysql_procedures,
)
from . import (
    signals as mysql_signals,
)
from .batches import Statement

if TYPE_CHECKING:
    from ..writes import ClaimRequest, InstanceWrite, Ride

SIGNAL_LOCK_NAME = "signals"
"""The StoreLock row that signals lock exclusively and writes registering waits shared."""

_DEADLOCK_CODES = {1213}  # ER_LOCK_DEADLOCK

logger = logging.getLogger("django_workflows")


class MySQLBackend(Backend):
    """MySQL and MariaDB: InnoDB row locks on StoreLock rows, READ COMMITTED for renewals,
    the claim index scanned priority by priority."""

    counts_wakeups_after_commit = True  # a counter row lock would last until the caller's commit

    def __init__(self, alias: str) -> None:
        super().__init__(alias)
        self._procedures = mysql_procedures.procedures()  # whether it has the write procedures
        self._signal_procedure = mysql_signals.signal_procedure()  # and signal_by_routine()'s

    @functools.cached_property
    def is_mariadb(self) -> bool:
        """MariaDB rather than MySQL (read from the server once)."""
        return bool(self.connection.mysql_is_mariadb)  # type: ignore[attr-defined]

    @functools.cached_property
    def version(self) -> tuple[int, ...]:
        """The server's version (read from the server once)."""
        return tuple(self.connection.mysql_version)  # type: ignore[attr-defined]

    @functools.cached_property
    def exact_collation(self) -> str:  # type: ignore[override]
        """MariaDB's utf8mb4_nopad_bin, MySQL's utf8mb4_0900_bin (8.0.17 and later), or the
        padded utf8mb4_bin before it."""
        return mysql_collations.collation_for(self.is_mariadb, self.version)

    def check(self) -> list[CheckMessage]:
        """E005: a server without SKIP LOCKED; W002: key columns that compare inexactly."""
        shown = ".".join(map(str, self.version))
        problems: list[CheckMessage] = []
        if self.is_mariadb and self.version < (10, 6):
            problems.append(
                Error(
                    f"MariaDB {shown} lacks SELECT ... SKIP LOCKED: use 10.6 or newer.",
                    id="django_workflows.E005",
                )
            )
        elif not self.is_mariadb and self.version < (8, 0, 1):
            problems.append(
                Error(
                    f"MySQL {shown} lacks SELECT ... SKIP LOCKED: use 8.0.1 or newer.",
                    id="django_workflows.E005",
                )
            )
        models = apps.get_app_config("django_workflows").get_models()
        exact = self.exact_collation
        return problems + mysql_collations.check_collations(
            self.alias, self.connection, models, exact
        )

    def create_lock_rows(self) -> None:
        """The signal lock's row, created here rather than by the first of many concurrent
        lockers."""
        connection = self.connection
        if not router.allow_migrate_model(self.alias, StoreLock):
            return
        if StoreLock._meta.db_table in connection.introspection.table_names():
            StoreLock.objects.using(self.alias).get_or_create(name=SIGNAL_LOCK_NAME)

    def lock_signals(self, *, shared: bool) -> None:
        with self.connection.cursor() as cursor:
            _lock_row(cursor, SIGNAL_LOCK_NAME, shared=shared)

    def lock_names(self, names: list[str]) -> None:
        with self.connection.cursor() as cursor:
            for name in sorted(set(names)):
                _lock_row(cursor, name, shared=False)

    def await_row_lock(self, id: str) -> None:
        """No lock wait timeout for the rest of the connection: the waiting lock itself is
        granted at the commit, before any claim can lock the row."""
        with self.connection.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1073741824")

    def insert_or_lock(self, obj: Model, key_field: str) -> None:
        """INSERT ... ON DUPLICATE KEY UPDATE, which locks a duplicate it finds exclusively:
        INSERT IGNORE locks it *shared*, and two transactions that both found it, then lock it
        for update, each wait for the other's shared lock, a deadlock. It sets `key_field`, a
        column of that unique key, to the value it already has."""
        insert(obj, self.alias, OnConflict.UPDATE, [type(obj)._meta.get_field(key_field)])

    def read_committed_next(self) -> None:
        """Under REPEATABLE READ (their default) a locking read keeps the locks of every row it
        scanned, and a consistent read sees the transaction's snapshot."""
        connection = self.connection
        if connection.in_atomic_block:
            return
        connection.ensure_connection()
        if getattr(connection, "isolation_level", None) == "read committed":
            return  # the session's own level (Django's default): no statement needed
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")

    _packet: int | None = None  # the last max_allowed_packet read on any thread

    def max_allowed_packet(self) -> int | None:
        """The largest statement the server takes (a larger one drops the connection: "server
        has gone away"), read once per connection.

        A thread without a connection of its own (a gather branch: the execution's thread does
        its database work) gets the value read last, or opens one to read it and closes it."""
        connection = self.connection
        known = getattr(connection, "_workflows_packet", None)
        if connection.connection is None:
            if self._packet is not None:
                return self._packet
        elif known is not None and known[0] is connection.connection:
            return int(known[1])
        opened = connection.connection is None
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@max_allowed_packet")
            packet = int(cursor.fetchone()[0])
        self._packet = packet
        if opened:
            connection.close()
        else:
            connection._workflows_packet = (connection.connection, packet)  # type: ignore[attr-defined]
        return packet

    def is_deadlock(self, error: BaseException) -> bool:
        cause = error.__cause__ or error
        args: tuple[Any, ...] = tuple(getattr(cause, "args", ()))
        return bool(args) and args[0] in _DEADLOCK_CODES

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
        """The rows (id, workflow, concurrency_key, rate_limit_key, and `flag`'s value with a
        `flag`), locked (FOR UPDATE SKIP LOCKED), in claim order.

        The claim index holds the finished instances too here (no partial indexes; wake_at NULL
        sorts first), so a scan in claim order would walk them all. Instead: priority by
        priority, each found by one index dive past the one before, an index range scan from
        its first due instance, with FORCE INDEX (the optimizer otherwise prefers scanning the
        priority alone). lease_until follows the priority in the index, so the instances that
        run are not in the range of the free ones: each priority's range is read twice, lease_until NULL
        (in index order) and lease_until before now (the lapsed leases, sorted), and merged.
        With `queues`, the same on the queue's claim index, per queue and priority, merged in
        claim order. Claims under limits pass over the full workflows and
        keys with `where`.
        """
        columns = ", workflow, concurrency_key, rate_limit_key"
        if flag is not None:
            columns += f", {flag[0]} AS full_key"
        selected = (columns, flag[1] if flag is not None else [])
        return mysql_claims.candidates(
            self.connection, now, limit, workflows, where, queues, selected=selected
        )

    def lease(
        self, ids: list[str], *, token: str, owner: str, lease_until: Any, now: Any
    ) -> tuple[list[Any], int]:
        """One round trip, in the claim's transaction: the lease of the candidates a claim under
        limits picked, the last signal id and the leased rows (the statements of claim()'s
        own)."""
        connection = self.connection
        found = mysql_batches.results(
            connection,
            mysql_claims.lease_statements(connection, ids, token, owner, now, lease_until),
        )
        last = int(found[1][0][0])
        return self.rows.instances(connection, found[2]), last

    def wake_waiters(self, *, name: str, key: str | None, now: Any) -> Any:
        """A join from the waits: MariaDB before 11.1 runs an UPDATE's `IN (subquery)` as a
        dependent subquery, once for every suspended instance (3,300,000 index rows read, 18 s,
        a signal() with 100,000 suspended); the join reads the wait index, then each waiter by
        its primary key. STRAIGHT_JOIN holds the optimizer to that order: on a small table it
        would read the instances by the status index first and lock its entry before the row,
        the opposite order to a claim's update of that row (the row, then its entries in the
        indexes it changes), and the two deadlocked."""
        instance, wait = WorkflowInstance._meta.db_table, Wait._meta.db_table
        at = self.connection.ops.adapt_datetimefield_value(now)
        match = "w.`key` = %s" if key is not None else "w.`key` IS NULL"
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {wait} w STRAIGHT_JOIN {instance} i ON i.id = w.instance_id "
                f"SET i.wake_at = CASE WHEN i.wake_at IS NULL OR i.wake_at > %s THEN %s "
                f"ELSE i.wake_at END, i.updated_at = %s "
                f"WHERE w.`signal` = %s AND {match} AND i.status = %s",
                [at, at, at, name, *([key] if key is not None else []), Status.SUSPENDED],
            )
            return cursor.rowcount

    def delete_instances(self, ids: list[str]) -> int:
        """By hand-written SQL: the ORM's fifty deletes of a thousand ids spent half of a
        purge batch of 10,000 building their filters in Python (mysql_deletes)."""
        return mysql_deletes.delete_instances(self.connection, ids, self.max_allowed_packet())

    def listed_queues(self, limit: int) -> list[str]:
        """The queues of every instance, by a loose index scan of dw_instance_queue_due: the
        index holds the finished instances too here, and a condition on the wake time would
        read them all (seconds at a million rows)."""
        return self._first_values("queue", "dw_instance_queue_due", limit)

    def index_hint(self, index: str) -> str:
        """FORCE INDEX: with a dozen indexes to weigh, the optimizer spends milliseconds on
        its estimates of each before a read of one entry (10.9 against 0.24 ms for a keyed
        start's read of the line's front, 100,000 due instances, `claim_scale.py
        --fair-keys 10000`)."""
        return f"FORCE INDEX ({index})"

    def listed_fair_keys(self, limit: int) -> list[str]:
        """A loose index scan of dw_instance_fair (MySQL's and MariaDB's own for a DISTINCT of
        an index's first column): the index holds the keyless instances too here."""
        return self._first_values("fair_key", "dw_instance_fair", limit)

    def _first_values(self, column: str, index: str, limit: int) -> list[str]:
        """The first `limit` values of `column`, the first of `index`, sorted: a DISTINCT that
        MySQL and MariaDB read by a loose scan of the index (NULL left out)."""
        table = WorkflowInstance._meta.db_table
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"SELECT DISTINCT {column} FROM {table} FORCE INDEX ({index}) "
                f"WHERE {column} IS NOT NULL ORDER BY {column} LIMIT %s",
                [limit],
            )
            return [row[0] for row in cursor.fetchall()]

    def first_rows(self) -> AbstractContextManager[Any]:
        """MariaDB picks a join's order without its LIMIT: for a page of the instances with a
        tag it read the tag's 100,000 rows first, then sorted their instances (0.93 s at
        1,000,000 instances, admin_scale.py). With optimizer_join_limit_pref_ratio at 1 (a
        variable of recent releases: 10.11.19 has it) it weighs reading dw_instance_created
        backward, each row's tag probed in dw_tag_unique, and takes that when its estimate is
        the cheaper: 12 ms; a tag of 1,000 rows or fewer is still read first (10 ms). The
        estimate takes a tag's instances as spread over the list: a tag of 20,000 of the
        oldest instances took 2.4 s, against 0.1 s by its rows. Set for each SELECT only (SET
        STATEMENT); without the variable (MySQL, older MariaDB), nothing."""
        if not self.has_limit_preference:
            return contextlib.nullcontext()
        return self.connection.execute_wrapper(_prefer_limit)

    @functools.cached_property
    def has_limit_preference(self) -> bool:
        """Whether the server has optimizer_join_limit_pref_ratio (read once)."""
        with self.connection.cursor() as cursor:
            cursor.execute("SHOW VARIABLES LIKE 'optimizer_join_limit_pref_ratio'")
            return bool(cursor.fetchall())

    def due_ranges(self, rows: QuerySet[Any], queues: list[str] | None) -> QuerySet[Any]:
        """The claim indexes hold every instance here (no partial indexes). With the queues,
        the index's priorities and both parked values given, the due ones are ranges of
        dw_instance_queue_due (queue, priority, parked, lease_until, wake_at), which the
        optimizer reads: an aggregate by queue of 10,000 due among 1,000,000 instances from
        that index alone in 4 ms. Without them, MariaDB read the due instances among all the
        unfinished ones (by dw_instance_status), or the whole index. The queues and the
        priorities are read by one index dive each, as the claim's."""
        return rows.filter(
            queue__in=self._queues() if queues is None else queues,
            priority__in=self._priorities(),
            parked__in=[False, True],
        )

    def _queues(self) -> list[str]:
        """Every queue of an instance: the distinct first column of dw_instance_queue_due,
        which MariaDB and MySQL read by one dive per queue (a loose index scan)."""
        return list(
            WorkflowInstance.objects.using(self.alias)
            .order_by()
            .values_list("queue", flat=True)
            .distinct()
        )

    def _priorities(self) -> list[int]:
        """Every priority in dw_instance_due, ascending: one dive each for the next one."""
        table = WorkflowInstance._meta.db_table
        found: list[int] = []
        with self.connection.cursor() as cursor:
            while True:
                after = "WHERE priority > %s " if found else ""
                cursor.execute(
                    f"SELECT priority FROM {table} FORCE INDEX (dw_instance_due) {after}"
                    f"ORDER BY priority LIMIT 1",
                    found[-1:],
                )
                row = cursor.fetchone()
                if row is None:
                    return found
                found.append(row[0])

    def start_alone(self, instance: WorkflowInstance) -> bool:
        """The INSERT and the wake-up count, sent in one round trip (batches.counts()): each
        commits on its own, as the count must, after the row it announces. The count's UPDATE
        counts only when the INSERT inserted (ROW_COUNT(), the previous statement's count);
        the first count of a thread's counter row, which does not exist yet, is made after.
        On MariaDB 0.30-0.39 ms of the caller's CPU a start, against 0.42-0.46 ms sending
        them one after the other (benchmarks/start_cpu.py, back to back)."""
        sql, params = self.started_row(instance)
        count = (f"{self.count_wakeup_sql} AND ROW_COUNT() = 1", [self.wakeup_shard()])
        inserted, counted = mysql_batches.counts(self.connection, [(sql, params), count])
        if inserted and not counted:
            self.count_wakeup()
        return inserted == 1

    def signal_by_routine(
        self, *, name: str, key: str | None, dedupe_id: str | None, payload: Any, now: Any
    ) -> tuple[int, int, bool, str | None] | None:
        """dw_signal_v1 (signals.py) in one round trip, outside any transaction (it commits its
        own); None inside one, or without it. The first count of a thread's counter row, which
        does not exist yet, is made after, as notify()'s count after a commit: a failure is
        logged, not raised (the signal is committed by then, and an idle worker finds it at its
        next poll)."""
        connection = self.connection
        if connection.in_atomic_block or not connection.get_autocommit():
            return None
        if not self._signal_procedure.available(connection):
            return None
        params = [
            name,
            key,
            dedupe_id,
            self.routine_payload(name=name, key=key, now=now, payload=payload),
            connection.ops.adapt_datetimefield_value(now),
            self.wakeup_shard(),
        ]
        [id, woken, created, stored_key, counted] = mysql_batches.results(
            connection, [(mysql_signals.SIGNAL_CALL, params)]
        )[0][0]
        if created and not counted:
            try:
                self.count_wakeup()
            except DatabaseError:
                logger.exception("Counting the wake-up of signal %s failed.", id)
        return int(id), int(woken), bool(created), stored_key

    def write(
        self, id: str, token: str, write: InstanceWrite, ride: Ride | None = None
    ) -> Written | None:
        """One round trip: the row lock's read by the lease token, the journal's upsert and
        the instance's update sent as one batch, with their transaction's START and COMMIT
        (batches.py). Its two most frequent forms call a procedure of the database's own
        instead, where it has them (procedures.py). A write that takes the signal lock,
        restarts the journal or sets search attributes (fast_writable) takes the generic body.
        Nothing rides here (`ride`: has_rides is False)."""
        if not fast_writable(write):
            return super().write(id, token, write, ride)
        connection = self.connection
        changes, wake_at = write_changes(write)
        unparks = write.release is not None and write.unpark is not None
        if wake_at is UNSET and not unparks and self._procedures.available(connection):
            called = mysql_procedures.call(connection, id, token, journal_rows(write), changes)
            if called is not None:
                rows = mysql_batches.run_batch(connection, [called])
                return Written(*rows[0][:3]) if rows else None
        statements = mysql_batches.write_statements(connection, id, token, write, changes, wake_at)
        rows = mysql_batches.run_batch(connection, statements)
        return Written(*rows[0][:3]) if rows else None

    def forget_routines(self) -> None:
        self._procedures.forget()
        self._signal_procedure.forget()

    def claim(
        self, request: ClaimRequest, pick: Callable[[], list[str]] | None = None
    ) -> tuple[list[Any], int]:
        """Without limits, one transaction in two round trips: START TRANSACTION with the
        priorities' read and the scans of the default priority, the candidates locked (SKIP
        LOCKED); then the lease, the last signal id, the leased rows and COMMIT in one batch
        (one round trip more for each further priority scanned). The ORM's version of the same
        statements cost about a quarter of a worker's time here, and each round trip more of
        the worker's and the server's CPU. Under limits (`pick`), the generic claim with this
        backend's candidates' scan and lease."""
        if pick is not None:
            return super().claim(request, pick)
        connection = self.connection
        # Under REPEATABLE READ the scans' gap locks cover where the leased rows' new index
        # entries go (lease_until is in the claim index): concurrent claims would deadlock.
        self.read_committed_next()
        own = connection.get_autocommit() and not connection.in_atomic_block
        commit: list[Statement] = [("COMMIT", [])] if own else []
        try:
            begin: list[Statement] = [("START TRANSACTION", [])] if own else []
            ids = mysql_claims.candidates(
                connection,
                request.now,
                request.limit,
                request.workflows,
                queues=request.queues,
                begin=begin,
            )
            if not ids:
                if own:
                    mysql_batches.results(connection, commit)
                return [], 0
            lease = mysql_claims.lease_statements(
                connection, ids, request.token, request.owner, request.now, request.lease_until
            )
            found = mysql_batches.results(connection, lease + commit)
        except BaseException:
            if own:
                mysql_batches.rollback(connection)
            raise
        last = int(found[1][0][0])
        return self.rows.instances(connection, found[2]), last

    def prepare_take(
        self, id: str, revision: int, own: str, state: Any, wake_at: Any, created_at: Any
    ) -> Any:
        return prepared_sql.prepare_take(
            self.connection, id, revision, own, state, wake_at, created_at
        )

    def prepare_row(self, obj: Model) -> list[Any]:
        return prepared_sql.prepare_row(self.connection, obj)

    def prepare_value(self, model: type[Model], name: str, value: Any) -> Any:
        return prepared_sql.literal(self.connection, super().prepare_value(model, name, value))

    def take_schedules(self, now: Any, takes: list[Take], unfinished: tuple[str, ...]) -> list[str]:
        return prepared_sql.take(self.connection, now, takes, unfinished)

    def insert_prepared(self, model: type[Model], rows: list[list[Any]]) -> int:
        return (
            prepared_sql.insert(self.connection, model, rows, self.max_allowed_packet())
            if rows
            else 0
        )


LIMIT_PREFERENCE = 1
"""optimizer_join_limit_pref_ratio: take the plan that stops at the LIMIT when its estimate is
cheaper at all (MariaDB's advice, 100, kept the tag's 0.93 s plan; 10 a 230 ms plan for a tag of
10,000 rows, against 24 ms)."""


def _prefer_limit(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    """An execute wrapper (first_rows()): each SELECT with LIMIT_PREFERENCE for itself."""
    if sql.lstrip()[:6].upper() == "SELECT":
        sql = f"SET STATEMENT optimizer_join_limit_pref_ratio={LIMIT_PREFERENCE} FOR {sql}"
    return execute(sql, params, many, context)


def _lock_row(cursor: Any, name: str, *, shared: bool) -> None:
    """Lock the store lock row `name` until the end of the transaction.

    Exclusively: ON DUPLICATE KEY UPDATE, which inserts the row if it is missing (a concurrency
    lock's first claim) and otherwise locks it for update; lockers that all find it missing
    then wait for the one that inserted it, rather than deadlock as a SELECT ... FOR UPDATE
    first would under REPEATABLE READ (its gap lock), or INSERT IGNORE's shared lock under any.
    Shared: LOCK IN SHARE MODE, on the signal lock's row, which migrate (and a test database's
    flush) creates (create_lock_rows); inserted the same way if missing all the same."""
    table = StoreLock._meta.db_table
    upsert = f"INSERT INTO {table} (name) VALUES (%s) ON DUPLICATE KEY UPDATE name = name"
    if not shared:
        cursor.execute(upsert, [name])
        return
    share = f"SELECT name FROM {table} WHERE name = %s LOCK IN SHARE MODE"
    cursor.execute(share, [name])
    if cursor.fetchone() is None:
        cursor.execute(upsert, [name])
        cursor.execute(share, [name])
