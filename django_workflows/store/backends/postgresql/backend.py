"""PostgreSQL: transaction-scoped advisory locks, NOTIFY/LISTEN, and the claim and the lease
holder's write each as one statement."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from django.core.checks import CheckMessage, Error
from django.db import transaction
from django.db.models import BooleanField, Model, Q
from django.db.models.constants import OnConflict
from django.db.models.expressions import RawSQL
from django.db.models.lookups import Exact

from ....jsonvalues import text as json_text
from ....models import (
    FINISHED,
    InstanceAttribute,
    InstanceTag,
    JournalEntry,
    Signal,
    Status,
    Wait,
    WorkflowInstance,
    WorkflowStream,
    WorkflowStreamItem,
)
from .. import driver
from ..ahead import Take
from ..base import ENDED_CHANNEL, NOTIFY_CHANNEL, Backend, Written
from ..inserts import insert_rows
from ..writes import (
    UNSET,
    fast_writable,
    journal_rows,
    routine_for,
    unpark_statement,
    write_changes,
)
from . import ahead as prepared_sql
from . import claims, libpq, signals, starts
from . import writes as writes_sql
from .claims import LEASE_CLASS

if TYPE_CHECKING:
    from ..writes import ClaimRequest, InstanceWrite, Ride

logger = logging.getLogger("django_workflows")

# pg_advisory_xact_lock keys: a fixed pair of ints, so other advisory-lock users can stay clear.
LOCK_CLASS = 0x44575746  # "DWWF": (LOCK_CLASS, SIGNAL_LOCK), (LOCK_CLASS, hashtext(name))
SIGNAL_LOCK = 1

_DEADLOCK_STATES = {"40P01", "40001"}  # deadlock_detected, serialization_failure
_JSON_COLUMNS = {"input", "output", "error", "custom_status"}
_FLAG_COLUMNS = (libpq.BOOLEAN, libpq.BOOLEAN, libpq.TEXT)
"""The write functions' row: cancel_requested, terminate_requested, cancel_reason."""

_VOID = (libpq.TEXT,)
"""pg_notify()'s row: one NULL."""


@functools.lru_cache(maxsize=8)
def _notifying(insert: str) -> str:
    """`insert` (an INSERT that may insert nothing) and a pg_notify() when it inserted."""
    return f"WITH started AS ({insert} RETURNING 1) SELECT pg_notify(%s, '') FROM started"


class PostgreSQLBackend(Backend):
    """PostgreSQL: signals and limits ordered by advisory locks, other processes woken by
    NOTIFY, the hot claim and write in one statement each."""

    has_advisory_locks = True
    has_listen_notify = True
    has_rides = True
    starts_alone_in_transactions = True
    rejects_nul = True
    max_value_bytes = 255 * 1024 * 1024  # what jsonb holds at most
    json_parameter = "%s::jsonb"
    datetime_parameter = "%s::timestamptz"

    def __init__(self, alias: str) -> None:
        super().__init__(alias)
        self._functions = writes_sql.functions()  # whether the database has the write functions
        self._ride_function = claims.ride_function()  # and the function a claim rides on
        self._start_function = starts.start_function()  # and the start's (start_alone())
        self._signal_function = signals.signal_function()  # and a signal's (signal_by_routine())

    def check(self) -> list[CheckMessage]:
        """E004: transactions stricter than READ COMMITTED."""
        connection = self.connection
        with connection.cursor() as cursor:
            cursor.execute("SHOW default_transaction_isolation")
            level = cursor.fetchone()[0]
        configured = connection.settings_dict.get("OPTIONS", {}).get("isolation_level")
        if level == "read committed" and configured in (None, 1):
            return []
        return [
            Error(
                f"The workflow database {self.alias!r} runs transactions at {level.upper()}: the "
                f"store relies on READ COMMITTED, PostgreSQL's default.",
                id="django_workflows.E004",
            )
        ]

    def lock_signals(self, *, shared: bool) -> None:
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        with self.connection.cursor() as cursor:
            cursor.execute(f"SELECT {function}(%s, %s)", [LOCK_CLASS, SIGNAL_LOCK])

    def lock_names(self, names: list[str]) -> None:
        with self.connection.cursor() as cursor:
            for name in sorted(set(names)):
                cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [LOCK_CLASS, name])

    def await_row_lock(self, id: str) -> None:
        """No lock or statement timeout for the rest of the transaction, and the instance's
        lease lock: a transaction that updated the row leaves a new row version, which the
        waiting renewal locks only after it wakes up, and meanwhile claims would pass over the
        instance all the same (lapsed_lease_free keeps them off)."""
        with self.connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = 0")
            cursor.execute("SET LOCAL statement_timeout = 0")
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [LEASE_CLASS, id])

    def lapsed_lease_free(self) -> Q:
        """That no renewal holds the instance's lease lock (await_row_lock). Evaluated only for
        lapsed leases, each lock held until the claim commits."""
        table = self.connection.ops.quote_name(WorkflowInstance._meta.db_table)
        sql = f"pg_try_advisory_xact_lock(%s, hashtext({table}.id))"
        return Q(Exact(RawSQL(sql, [LEASE_CLASS], output_field=BooleanField()), True))

    def transaction_isolation(self) -> str | None:
        with self.connection.cursor() as cursor:
            cursor.execute("SHOW transaction_isolation")
            return str(cursor.fetchone()[0])

    def is_deadlock(self, error: BaseException) -> bool:
        cause = error.__cause__ or error
        return getattr(cause, "sqlstate", None) in _DEADLOCK_STATES

    def transaction_aborted(self) -> bool:
        raw = self.connection.connection  # psycopg's own: its status, without a query
        return raw is not None and raw.info.transaction_status.name == "INERROR"

    def insert_ignore_many(self, objs: Sequence[Model]) -> int:
        # A batch (a schedule tick's) by the ORM: from Django 5.2 it sends one array per column
        # through UNNEST, fewer parameters to quote than the rows' own (0.24-0.29 ms of a
        # tick's CPU per schedule, against 0.30-0.35 ms by hand). One row (a start()) by hand.
        if len(objs) > 1:
            return insert_rows(objs, self.alias, OnConflict.IGNORE, [])
        return super().insert_ignore_many(objs)

    def prepare_take(
        self, id: str, revision: int, own: str, state: Any, wake_at: Any, created_at: Any
    ) -> Any:
        return prepared_sql.prepare_take(
            self.connection, id, revision, own, state, wake_at, created_at
        )

    def prepare_row(self, obj: Model) -> list[Any]:
        return prepared_sql.prepare_row(self.connection, obj)

    def prepare_value(self, model: type[Model], name: str, value: Any) -> Any:
        field_value = super().prepare_value(model, name, value)
        return prepared_sql.array_element(self.connection, field_value)

    def take_schedules(self, now: Any, takes: list[Take], unfinished: tuple[str, ...]) -> list[str]:
        return prepared_sql.take(self.connection, now, takes, unfinished)

    def insert_prepared(self, model: type[Model], rows: list[list[Any]]) -> int:
        return prepared_sql.insert(self.connection, model, rows) if rows else 0

    def start_alone(self, instance: WorkflowInstance) -> bool:
        """The INSERT and, when it inserted, its pg_notify(): the function dw_start_v1
        (starts.py), or one statement where the database has none, sent through libpq itself
        with its parameters as text: psycopg's cursor machinery around it was a seventh of an
        enqueue()'s CPU (docs/discussions/performance.md)."""
        sql, params = self.started_row(instance)
        if self._start_function.available(self.connection):
            row = libpq.call_row(self.connection, starts.START_CALL, params, (libpq.BOOLEAN,))
            return row is not None and row[0]
        row = libpq.call_row(self.connection, _notifying(sql), [*params, NOTIFY_CHANNEL], _VOID)
        return row is not None

    def notify(self) -> None:
        # Through libpq, as the writes: a cursor's machinery was a tenth of a start()'s CPU.
        libpq.call_row(self.connection, "SELECT pg_notify(%s, '')", [NOTIFY_CHANNEL], _VOID)

    def notify_ended(self, instance_id: str) -> None:
        libpq.call_row(
            self.connection, "SELECT pg_notify(%s, %s)", [ENDED_CHANNEL, instance_id], _VOID
        )

    def listen(
        self,
        wake: Callable[[str], None],
        stop: threading.Event,
        channel: str = NOTIFY_CHANNEL,
    ) -> None:
        """LISTEN on a connection of its own, outside Django's, in autocommit mode; on a
        failure, connect again 5 seconds later."""
        connection = self.connection
        while not stop.is_set():
            try:
                raw = connection.get_new_connection(connection.get_connection_params())
                try:
                    raw.autocommit = True
                    raw.execute(f"LISTEN {channel}")
                    while not stop.is_set():
                        for notify in raw.notifies(timeout=1.0):
                            wake(notify.payload)
                finally:
                    raw.close()
            except Exception:
                logger.exception("Listening for PostgreSQL notifications failed; retrying in 5s.")
                stop.wait(5)

    def delete_instances(self, ids: list[str]) -> int:
        """One statement with the ids as one array: the ORM's five deletes, each with ten
        thousand parameters quoted one by one, cost a purge batch 1.6 s in Python alone."""
        dependents = [
            JournalEntry,
            Wait,
            InstanceTag,
            InstanceAttribute,
            WorkflowStreamItem,
            WorkflowStream,
        ]
        deletes = ", ".join(
            f"d{n} AS (DELETE FROM {model._meta.db_table} WHERE instance_id IN "
            f"(SELECT id FROM doomed))"
            for n, model in enumerate(dependents)
        )
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"WITH doomed AS (SELECT unnest(%s::text[]) AS id), {deletes} "
                f"DELETE FROM {WorkflowInstance._meta.db_table} "
                f"WHERE id IN (SELECT id FROM doomed)",
                [list(ids)],
            )
            return int(cursor.rowcount)

    def signal_by_routine(
        self, *, name: str, key: str | None, dedupe_id: str | None, payload: Any, now: Any
    ) -> tuple[int, int, bool, str | None] | None:
        """dw_signal_v1 (signals.py), through libpq as the start's function, in the caller's
        transaction or in one of its own; None without it."""
        if not self._signal_function.available(self.connection):
            return None
        stored = self.routine_payload(name=name, key=key, now=now, payload=payload)
        row = libpq.call_row(
            self.connection,
            signals.SIGNAL_CALL,
            [name, key, dedupe_id, stored, now],
            (int, int, libpq.BOOLEAN, libpq.TEXT),
        )
        assert row is not None  # the function returns one row
        id, woken, created, stored_key = row
        return id, woken, created, stored_key

    def insert_signal(
        self, *, name: str, key: str | None, dedupe_id: str | None, payload: Any, now: Any
    ) -> tuple[int, int]:
        """The INSERT and the wake-up's UPDATE as one statement: the ORM built the two for
        about a third of a signal()'s time. Its snapshot is taken after the signal lock (a
        statement before it), so the UPDATE sees every wait committed under the shared lock."""
        q = self.connection.ops.quote_name
        signal, instance, wait = (m._meta.db_table for m in (Signal, WorkflowInstance, Wait))
        stored = Signal._meta.get_field("payload").get_db_prep_save(payload, self.connection)
        match = f"{q('key')} = %s" if key is not None else f"{q('key')} IS NULL"
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"WITH signal AS (INSERT INTO {signal} (name, {q('key')}, dedupe_id, payload, "
                f"created_at) VALUES (%s, %s, %s, %s, %s) RETURNING id), "
                f"woken AS (UPDATE {instance} SET wake_at = CASE WHEN wake_at IS NULL OR "
                f"wake_at > %s THEN %s ELSE wake_at END, updated_at = %s WHERE status = %s AND "
                f"id IN (SELECT instance_id FROM {wait} WHERE {q('signal')} = %s AND {match}) "
                f"RETURNING 1) SELECT (SELECT id FROM signal), (SELECT COUNT(*) FROM woken)",
                [name, key, dedupe_id, stored, now, now, now, now, Status.SUSPENDED, name]
                + ([key] if key is not None else []),
            )
            id, woken = cursor.fetchone()
        return int(id), int(woken)

    def listed_queues(self, limit: int) -> list[str]:
        """A loose index scan, written out (PostgreSQL has none of its own): the next queue
        after the last one found, one seek each in the partial index dw_instance_queue_due,
        rather than a DISTINCT that reads every entry of the index (which holds the parked
        instances too, in a column of their own). It holds no leased instance: the queues of
        those come from dw_instance_leased (the instances that run)."""
        table = WorkflowInstance._meta.db_table
        sql = (
            f"{_loose_scan('queue', 'wake_at IS NOT NULL AND lease_until IS NULL')} UNION "
            f"SELECT DISTINCT queue FROM {table} WHERE wake_at IS NOT NULL "
            f"AND lease_until IS NOT NULL ORDER BY 1 LIMIT %s"
        )
        with self.connection.cursor() as cursor:
            cursor.execute(sql, [limit, limit])
            return [row[0] for row in cursor.fetchall()]

    def listed_fair_keys(self, limit: int) -> list[str]:
        """A loose index scan of dw_instance_fair, as listed_queues(): one seek per key rather
        than a DISTINCT that reads an entry per keyed instance."""
        with self.connection.cursor() as cursor:
            cursor.execute(_loose_scan("fair_key", "fair_key IS NOT NULL"), [limit])
            return [row[0] for row in cursor.fetchall()]

    def write(
        self, id: str, token: str, write: InstanceWrite, ride: Ride | None = None
    ) -> Written | None:
        """One statement: lock the row in a CTE, upsert the entries, update, notify, return.
        Its two most frequent forms call a function of the database's own where it has them
        (_function_call); an instance's last write with `ride` the one that also leases the
        next due instance (_ride). A write that takes the signal lock, restarts the journal or
        sets search attributes (fast_writable) takes the generic body."""
        if not fast_writable(write):
            return super().write(id, token, write, ride)
        instances = WorkflowInstance._meta.db_table
        rows = journal_rows(write)
        changes, wake_at = write_changes(write)
        # result() and get_value() in other processes wake at the commit
        announce = write.announce or changes.get("status") in FINISHED
        unpark = unpark_statement(write, "parked")
        if unpark is None and wake_at is UNSET and self._functions.available(self.connection):
            called = _function_call(id, token, rows, changes, announce=announce)
            if called is not None:
                if ride is not None and called[0] == writes_sql.FINAL_CALL and self._rides(ride):
                    return self._ride(called[1], write, ride)
                row = libpq.call_row(self.connection, *called, _FLAG_COLUMNS, prepare=True)
                return None if row is None else Written(*row)
        params: list[Any] = [id, token]
        parts = [writes_sql.held("%s", "%s")]
        if rows:
            parts.append(writes_sql.written("%s::jsonb"))
            params.append(json_text(rows))
        sets: list[str] = []
        values: list[Any] = []
        for name, value in changes.items():
            column = WorkflowInstance._meta.get_field(name).column  # type: ignore[union-attr]
            if name in _JSON_COLUMNS:
                sets.append(f"{column} = %s::jsonb")
                values.append(None if value is None else json_text(value))
            else:
                sets.append(f"{column} = %s")
                values.append(value)
        if wake_at is not UNSET:
            sets.append("wake_at = CASE WHEN held.cancel_requested THEN %s ELSE %s END")
            values += [write.now, wake_at]
        if sets:
            parts.append(
                f", changed AS (UPDATE {instances} AS i SET {', '.join(sets)} "
                f"FROM held WHERE i.id = held.id RETURNING 1)"
            )
            params += values
        select = " SELECT cancel_requested, terminate_requested, cancel_reason"
        if announce:
            select += ", (SELECT pg_notify(%s, held.id) WHERE held.awaited)"
            params.append(ENDED_CHANNEL)
        parts.append(select + " FROM held")
        if unpark is None:
            found = driver.fetch(self.connection, "".join(parts), params)
            return Written(*found[0][:3]) if found else None
        # A statement of its own, after the one that locked the row: its snapshot then holds
        # what a claim parked while this write waited for the row (store/parking.py).
        with (
            transaction.atomic(using=self.alias, savepoint=False),
            self.connection.cursor() as cursor,
        ):
            cursor.execute("".join(parts), params)
            row = cursor.fetchone()
            if row is not None:
                cursor.execute(*unpark)
            return None if row is None else Written(*row[:3])

    def _rides(self, ride: Ride) -> bool:
        """Whether a claim can ride on an instance's last write: not of several queues (each a
        range of its own, which a claim merges), nor on a database without the function."""
        if ride.queues is not None and len(ride.queues) != 1:
            return False
        return self._ride_function.available(self.connection)

    def _ride(self, params: list[Any], write: InstanceWrite, ride: Ride) -> Written | None:
        """dw_final_write_ride_v2's call (postgresql/claims.py) with dw_final_write_v1's
        `params`: the flags, and ([the instance it leased, if any], the last signal id); None
        when the lease is gone."""
        more = claims.ride_params(
            owner=ride.owner,
            token=ride.token,
            lease_until=write.now + ride.lease_duration,
            workflows=ride.workflows,
            queue=ride.queues[0] if ride.queues else None,
        )
        row = libpq.call_row(
            self.connection, claims.RIDE_CALL, [*params, *more], claims.RIDE_COLUMNS, prepare=True
        )
        if row is None:
            return None
        if row[4] is None:  # the instance's id: NULL when nothing was leased
            return Written(row[0], row[1], row[2], ([], 0))
        leased = self.rows.instances(self.connection, [row[4:]])
        return Written(row[0], row[1], row[2], (leased, int(row[3])))

    def forget_routines(self) -> None:
        self._functions.forget()
        self._ride_function.forget()
        self._start_function.forget()
        self._signal_function.forget()

    def claim(
        self, request: ClaimRequest, pick: Callable[[], list[str]] | None = None
    ) -> tuple[list[Any], int]:
        """Without limits, one statement (claims.claim_sql): pick the due candidates FOR UPDATE
        SKIP LOCKED, lease them, and return them with the last signal id. Under limits
        (`pick`), the generic claim with this backend's candidates' scan and lease, one
        statement each."""
        if pick is not None:
            return super().claim(request, pick)
        sql, params = claims.claim_sql(request)
        return claims.leased(self.connection, self.rows, sql, params)

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
        """One statement: the due candidates FOR UPDATE SKIP LOCKED (claims.due_ranges) with
        room (`where`), as (id, workflow, concurrency_key, rate_limit_key) and `flag`'s value,
        in claim order."""
        columns = "id, workflow, concurrency_key, rate_limit_key"
        picks, params = claims.due_ranges(
            columns=columns,
            now=now,
            limit=limit,
            workflows=workflows,
            queues=queues,
            where=where,
            flag=flag,
        )
        flagged = ", full_key" if flag else ""
        with self.connection.cursor() as cursor:
            cursor.execute(f"{picks}SELECT {columns}{flagged} FROM picked {claims.ORDER}", params)
            return [tuple(row) for row in cursor.fetchall()]

    def lease(
        self, ids: list[str], *, token: str, owner: str, lease_until: Any, now: Any
    ) -> tuple[list[Any], int]:
        """One statement: lease the candidates a claim under limits picked (and locked) and
        return them with the last signal id."""
        picked = (
            f"(SELECT id FROM {WorkflowInstance._meta.db_table} WHERE id = ANY(%s) "
            f"AND wake_at <= %s AND (lease_until IS NULL OR lease_until < %s)) AS picked"
        )
        lease, params = claims.lease_sql(
            picked, token=token, owner=owner, lease_until=lease_until, now=now
        )
        return claims.leased(self.connection, self.rows, lease, [*params, list(ids), now, now])


def _loose_scan(column: str, condition: str) -> str:
    """A loose index scan, written out (PostgreSQL has none of its own): the values of
    `column` in the rows `condition` keeps, sorted, each the next after the last one found by
    one seek in an index that starts with `column`; up to as many as its parameter says."""
    rows = f"FROM {WorkflowInstance._meta.db_table} WHERE {condition}"
    return (
        f"WITH RECURSIVE s(v, n) AS (SELECT MIN({column}), 1 {rows} UNION ALL "
        f"SELECT (SELECT MIN({column}) {rows} AND {column} > s.v), n + 1 FROM s "
        f"WHERE s.v IS NOT NULL AND n < %s) SELECT v FROM s WHERE v IS NOT NULL"
    )


def _function_call(
    id: str, token: str, rows: list[dict[str, Any]], changes: dict[str, Any], *, announce: bool
) -> tuple[str, list[Any]] | None:
    """The call of dw_journal_write for entries alone (a step started or ended), of
    dw_final_write for the end of an instance (its last entries, its final status and outcome,
    its lease let go, its end announced: postgresql_writes.py); None for any other write."""
    routine = routine_for(changes, rows)
    if routine == "journal":
        if announce:
            return None
        return writes_sql.JOURNAL_CALL, [id, token, json_text(rows)]
    if routine is None:
        return None
    output, error = (
        None if changes[name] is None else json_text(changes[name]) for name in ("output", "error")
    )
    return writes_sql.FINAL_CALL, [
        id,
        token,
        json_text(rows),
        changes["status"],
        output,
        error,
        changes["updated_at"],
    ]
