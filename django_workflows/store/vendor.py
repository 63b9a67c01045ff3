"""Every piece of vendor-specific SQL of the store, in one place.

PostgreSQL orders signals and suspensions with a transaction-scoped advisory lock, MySQL and
MariaDB with a lock row read FOR UPDATE / LOCK IN SHARE MODE, and SQLite with its database lock.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.db import DatabaseError, connections
from django.db.models import Model
from django.db.models.constants import OnConflict
from django.db.models.fields import AutoFieldMixin
from django.db.models.sql import InsertQuery

from ..models import StoreLock
from .leaselocks import PG_LEASE_CLASS

logger = logging.getLogger("django_workflows")

# pg_advisory_xact_lock keys: a fixed pair of ints, so other advisory-lock users can stay clear.
_PG_LOCK_CLASS = 0x44575746  # "DWWF"
_PG_SIGNAL_LOCK = 1
SIGNAL_LOCK_NAME = "signals"


def lock_signals(using: str, *, shared: bool) -> None:
    """Take the signal lock until the end of the current transaction.

    Signals take it exclusively, writes that register waits take it shared: signal ids then
    become visible in id order, and a signal never slips past an instance that is suspending.
    """
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
            cursor.execute(f"SELECT {function}(%s, %s)", [_PG_LOCK_CLASS, _PG_SIGNAL_LOCK])
        elif connection.vendor == "mysql":
            _lock_row(cursor, SIGNAL_LOCK_NAME, shared=shared)
    # SQLite: one writer at a time; the database's write lock orders them.
    take_write_lock(using)


def take_write_lock(using: str) -> None:
    """On SQLite, take the database's write lock at the start of a store transaction.

    A deferred transaction that reads first and writes later fails at once with "database is
    locked" when another connection writes meanwhile (SQLite cannot wait there without risking
    a deadlock); taking the write lock first makes it wait for its turn (the busy timeout)
    instead. Django 5.1+ does this for every transaction with OPTIONS["transaction_mode"] =
    "IMMEDIATE", and then this is a no-op; on Django 4.2 it is how the worker's threads share
    the file.
    """
    connection = connections[using]
    if connection.vendor != "sqlite" or not connection.in_atomic_block:
        return
    if connection.settings_dict.get("OPTIONS", {}).get("transaction_mode") == "IMMEDIATE":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {StoreLock._meta.db_table} SET name = name WHERE 1 = 0")


def lock_names(using: str, names: list[str]) -> None:
    """Exclusive transaction-scoped locks on `names`, taken in sorted order (claims under limits)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        for name in sorted(set(names)):
            if connection.vendor == "postgresql":
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [_PG_LOCK_CLASS, name]
                )
            elif connection.vendor == "mysql":
                _lock_row(cursor, name, shared=False)


def _lock_row(cursor: Any, name: str, *, shared: bool) -> None:
    """Lock the store lock row `name` until the end of the transaction (MySQL, MariaDB).

    Exclusively: ON DUPLICATE KEY UPDATE, which inserts the row if it is missing (a concurrency
    lock's first claim) and otherwise locks it for update; lockers that all find it missing
    then wait for the one that inserted it, rather than deadlock as a SELECT ... FOR UPDATE
    first would under REPEATABLE READ (its gap lock), or INSERT IGNORE's shared lock under any.
    Shared: LOCK IN SHARE MODE, on the signal lock's row, which migrate (and a test database's
    flush) creates (apps._create_lock_rows); inserted the same way if missing all the same."""
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


def mysql_claim_candidates(
    using: str,
    *,
    now: Any,
    limit: int,
    workflows: list[tuple[str, int]],
    where: tuple[str, list[Any]] = ("", []),
) -> list[str] | Any:
    """On MySQL and MariaDB, the ids a claim leases, locked (FOR UPDATE SKIP LOCKED), in claim
    order; NotImplemented elsewhere.

    The claim index holds the finished instances too there (no partial indexes; wake_at NULL
    sorts first), so a scan in claim order would walk them all. Instead: the distinct
    priorities, from a loose index scan, then for each an index range scan from its first due
    instance, with FORCE INDEX (the optimizer otherwise prefers scanning the priority alone).
    `where` adds a condition (SQL and its parameters): claims under limits pass over the full
    workflows and keys.
    """

    connection = connections[using]
    if connection.vendor != "mysql":
        return NotImplemented
    with connection.cursor() as cursor:
        return _mysql_candidates(connection, cursor, now, limit, workflows, where)


def _mysql_candidates(
    connection: Any,
    cursor: Any,
    now: Any,
    limit: int,
    workflows: list[tuple[str, int]],
    where: tuple[str, list[Any]] = ("", []),
) -> list[str]:
    from ..models import WorkflowInstance

    table = WorkflowInstance._meta.db_table
    pairs = " OR ".join("(workflow = %s AND version = %s)" for _ in workflows)
    adapt = connection.ops.adapt_datetimefield_value
    ids: list[str] = []
    cursor.execute(f"SELECT DISTINCT priority FROM {table} ORDER BY priority")
    priorities = [row[0] for row in cursor.fetchall()]
    for priority in priorities:
        params: list[Any] = [priority, adapt(_EARLIEST), adapt(now), adapt(now)]
        for name, version in workflows:
            params += [name, version]
        params += [*where[1], limit - len(ids)]
        cursor.execute(
            f"SELECT id FROM {table} FORCE INDEX (dw_instance_due) "
            f"WHERE priority = %s AND wake_at >= %s AND wake_at <= %s "
            f"AND (lease_until IS NULL OR lease_until < %s) AND ({pairs}) "
            f"{'AND ' + where[0] if where[0] else ''} "
            f"ORDER BY priority, wake_at, created_at, id LIMIT %s FOR UPDATE SKIP LOCKED",
            params,
        )
        ids += [row[0] for row in cursor.fetchall()]
        if len(ids) >= limit:
            break
    return ids


_EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)  # before any wake time: MySQL's earliest DATETIME


def insert_ignore(obj: Model, using: str) -> bool:
    """INSERT the row unless its key exists (ON CONFLICT DO NOTHING / INSERT IGNORE / OR IGNORE).

    Returns whether it inserted. Never catches a duplicate-key error: inside the caller's
    transaction on PostgreSQL that would abort the whole transaction.
    """
    return _insert(obj, using, OnConflict.IGNORE, []) == 1


def insert_or_lock(obj: Model, using: str, key_field: str) -> None:
    """INSERT the row unless its unique key exists; on MySQL/MariaDB the row found there is then
    locked for update (the caller locks it FOR UPDATE next on the others).

    MySQL/MariaDB's INSERT IGNORE locks a duplicate it finds *shared*: two transactions that
    both found it, then lock it for update, each wait for the other's shared lock, a deadlock.
    ON DUPLICATE KEY UPDATE locks the duplicate exclusively instead; it sets `key_field`, a
    column of that unique key, to the value it already has. PostgreSQL's ON CONFLICT DO NOTHING
    waits for the inserting transaction and takes no lock; SQLite has one writer at a time.
    """
    if connections[using].vendor != "mysql":
        insert_ignore(obj, using)
        return
    _insert(obj, using, OnConflict.UPDATE, [type(obj)._meta.get_field(key_field)])


def _insert(obj: Model, using: str, on_conflict: OnConflict, update_fields: list[Any]) -> int:
    model = type(obj)
    fields = [
        f
        for f in model._meta.local_concrete_fields
        if not getattr(f, "generated", False)
        and not (isinstance(f, AutoFieldMixin) and getattr(obj, f.attname) is None)
    ]
    query = InsertQuery(model, on_conflict=on_conflict, update_fields=update_fields)
    query.insert_values(fields, [obj])
    connection = connections[using]
    compiler = query.get_compiler(using=using)
    inserted = 0
    with connection.cursor() as cursor:
        for sql, params in compiler.as_sql():
            cursor.execute(sql, params)
            inserted += max(cursor.rowcount, 0)
    return inserted


def upsert_kwargs(using: str, unique_fields: list[str], update_fields: list[str]) -> dict[str, Any]:
    """bulk_create() arguments for an upsert (MySQL's ON DUPLICATE KEY UPDATE takes no target)."""
    kwargs: dict[str, Any] = {"update_conflicts": True, "update_fields": update_fields}
    if connections[using].features.supports_update_conflicts_with_target:
        kwargs["unique_fields"] = unique_fields
    return kwargs


def read_committed_next(using: str) -> None:
    """On MySQL and MariaDB outside a transaction, run the next one under READ COMMITTED,
    whatever the session's level: under REPEATABLE READ (their default) a locking read keeps
    the locks of every row it scanned, and a consistent read sees the transaction's snapshot."""
    connection = connections[using]
    if connection.vendor == "mysql" and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")


def transaction_isolation(using: str) -> str | None:
    """The isolation level of the current transaction on PostgreSQL, else None."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        return str(cursor.fetchone()[0])


_packets: dict[str, int] = {}  # the last max_allowed_packet read, by alias


def max_allowed_packet(using: str) -> int | None:
    """On MariaDB and MySQL, the largest statement the server takes (a larger one drops the
    connection: "server has gone away"), read once per connection; None elsewhere.

    A thread without a connection of its own (a gather branch: the execution's thread does its
    database work) gets the value read last, or opens one to read it and closes it again."""
    connection = connections[using]
    if connection.vendor != "mysql":
        return None
    known = getattr(connection, "_workflows_packet", None)
    if connection.connection is None:
        if using in _packets:
            return _packets[using]
    elif known is not None and known[0] is connection.connection:
        return int(known[1])
    opened = connection.connection is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        packet = int(cursor.fetchone()[0])
    _packets[using] = packet
    if opened:
        connection.close()
    else:
        connection._workflows_packet = (connection.connection, packet)  # type: ignore[attr-defined]
    return packet


def skip_locked(using: str) -> bool:
    """Whether claims can SELECT ... FOR UPDATE SKIP LOCKED here (SQLite serializes instead)."""
    features = connections[using].features
    return bool(features.has_select_for_update and features.has_select_for_update_skip_locked)


NOTIFY_CHANNEL = "django_workflows"


def notify(using: str) -> None:
    """On PostgreSQL, NOTIFY the workers of other processes; delivered when the transaction commits."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, '')", [NOTIFY_CHANNEL])


ENDED_CHANNEL = "django_workflows_ended"


def notify_ended(using: str, instance_id: str) -> None:
    """On PostgreSQL, tell result() waiting in other processes that the instance ended."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [ENDED_CHANNEL, instance_id])


def listen(
    using: str,
    wake: Callable[[str], None],
    stop: threading.Event,
    channel: str = NOTIFY_CHANNEL,
) -> None:
    """On PostgreSQL, call `wake(payload)` for every NOTIFY on `channel` until `stop` is set.

    Runs on a connection of its own, outside Django's, in autocommit mode.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        return
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


_DEADLOCK_CODES = {1213}  # MySQL/MariaDB: ER_LOCK_DEADLOCK
_DEADLOCK_STATES = {"40P01", "40001"}  # PostgreSQL: deadlock_detected, serialization_failure

F = TypeVar("F", bound=Callable[..., Any])


def is_deadlock(error: BaseException) -> bool:
    """Whether the database broke a deadlock by rolling this transaction back."""
    cause = error.__cause__ or error
    if getattr(cause, "sqlstate", None) in _DEADLOCK_STATES:
        return True
    args: tuple[Any, ...] = tuple(getattr(cause, "args", ()))
    return bool(args) and args[0] in _DEADLOCK_CODES


def retries_deadlocks(fn: F) -> F:
    """Run a store function's own transaction again when the database broke a deadlock by
    rolling it back. Inside the caller's transaction the error reaches the caller, whose
    writes were rolled back too: only they can run the transaction again."""

    @functools.wraps(fn)
    def wrapper(using: str, *args: Any, **kwargs: Any) -> Any:
        connection = connections[using]
        for attempt in range(1, 6):
            try:
                return fn(using, *args, **kwargs)
            except DatabaseError as error:
                if connection.in_atomic_block or attempt == 5 or not is_deadlock(error):
                    raise
                logger.debug("Deadlock in %s, attempt %d; running it again.", fn.__name__, attempt)
                time.sleep(random.uniform(0.001, 0.01) * attempt)
        raise AssertionError("unreachable")

    return wrapper  # type: ignore[return-value]


_JSON_COLUMNS = {"input", "output", "error", "custom_status"}


def fast_write(using: str, id: str, token: str, write: Any) -> Any:
    """The lease holder's write by hand-written SQL, when it needs no signal lock (it records no
    signal and registers or clears no waits): lock the row by its lease token, upsert the
    journal entries, change the instance, return the flags (None: the lease is gone). Returns
    NotImplemented where the store must take the general path (SQLite, or a signal lock).

    The step's start, the most frequent write, is one of these. PostgreSQL does it in one
    statement; MySQL and MariaDB in three, without the ORM's query building and the two
    autocommit switches around each of Django's transactions.
    """
    vendor = connections[using].vendor
    if vendor not in ("postgresql", "mysql") or write.signal is not None:
        return NotImplemented
    if write.release is not None and (write.release.waits or write.release.had_waits):
        return NotImplemented
    if vendor == "postgresql":
        return _pg_write(using, id, token, write)
    return _mysql_write(using, id, token, write)


def _changes(write: Any) -> tuple[dict[str, Any], Any]:
    """The instance's new column values, and the wake time of a suspension (_UNSET if it does
    not suspend): a cancel requested meanwhile makes it due at once, decided under the lock."""
    from ..models import FINISHED, Status

    release = write.release
    changes = dict(write.changes)
    wake_at: Any = _UNSET
    if release is not None:
        status = changes.get("status")
        changes.update(lease_token=None, lease_until=None)
        if status in FINISHED:
            changes["wake_at"] = None
        elif status == Status.SUSPENDED and not release.hold:
            wake_at = release.wake_at
        else:
            changes["wake_at"] = release.wake_at
    elif write.lease_until is not None:
        changes["lease_until"] = write.lease_until
    if changes and set(changes) - {"lease_until"} or wake_at is not _UNSET:
        changes["updated_at"] = write.now
    return changes, wake_at


def _pg_write(using: str, id: str, token: str, write: Any) -> Any:
    """One statement: lock the row in a CTE, upsert the entries, update, notify, return."""
    from ..models import FINISHED, JournalEntry, WorkflowInstance

    instances = WorkflowInstance._meta.db_table
    journal = JournalEntry._meta.db_table
    params: list[Any] = [id, token]
    parts = [
        f"WITH held AS (SELECT id, cancel_requested, terminate_requested, cancel_reason, "
        f"awaited FROM {instances} WHERE id = %s AND lease_token = %s FOR UPDATE)"
    ]
    rows = [
        {"name": name, "document": document, "guarded": False}
        for name, document in write.entries.items()
    ] + [
        {"name": name, "document": document, "guarded": True}
        for name, document in write.guarded_entries.items()
    ]
    if rows:
        parts.append(
            f", written AS (INSERT INTO {journal} (instance_id, name, document) "
            f"SELECT held.id, e.name, e.document FROM held, ROWS FROM (jsonb_to_recordset(%s::jsonb) "
            f"AS (name text, document jsonb, guarded boolean)) WITH ORDINALITY "
            f"AS e(name, document, guarded, n) "
            f"WHERE NOT e.guarded OR NOT (held.cancel_requested OR held.terminate_requested) "
            f"ORDER BY e.n ON CONFLICT (instance_id, name) DO UPDATE SET document = EXCLUDED.document "
            f"RETURNING 1)"
        )
        params.append(json.dumps(rows))
    changes, wake_at = _changes(write)
    sets: list[str] = []
    values: list[Any] = []
    for name, value in changes.items():
        column = WorkflowInstance._meta.get_field(name).column  # type: ignore[union-attr]
        if name in _JSON_COLUMNS:
            sets.append(f"{column} = %s::jsonb")
            values.append(None if value is None else json.dumps(value))
        else:
            sets.append(f"{column} = %s")
            values.append(value)
    if wake_at is not _UNSET:
        sets.append("wake_at = CASE WHEN held.cancel_requested THEN %s ELSE %s END")
        values += [write.now, wake_at]
    if sets:
        parts.append(
            f", changed AS (UPDATE {instances} AS i SET {', '.join(sets)} "
            f"FROM held WHERE i.id = held.id RETURNING 1)"
        )
        params += values
    select = " SELECT cancel_requested, terminate_requested, cancel_reason"
    if changes.get("status") in FINISHED:  # result() in other processes wakes at the commit
        select += ", (SELECT pg_notify(%s, held.id) WHERE held.awaited)"
        params.append(ENDED_CHANNEL)
    parts.append(select + " FROM held")
    with connections[using].cursor() as cursor:
        cursor.execute("".join(parts), params)
        row = cursor.fetchone()
        return None if row is None else row[:3]


def _mysql_write(using: str, id: str, token: str, write: Any) -> Any:
    """Three statements in one transaction: lock the row by its lease token, upsert the
    journal entries (the guarded ones only while no cancel or terminate is requested), update."""
    from ..models import JournalEntry, WorkflowInstance

    connection = connections[using]
    instances = WorkflowInstance._meta
    journal = JournalEntry._meta
    changes, wake_at = _changes(write)
    with _mysql_transaction(connection) as cursor:
        cursor.execute(
            f"SELECT cancel_requested, terminate_requested, cancel_reason FROM {instances.db_table} "
            f"WHERE id = %s AND lease_token = %s FOR UPDATE",
            [id, token],
        )
        row = cursor.fetchone()
        if row is None:
            return None
        cancel_requested, terminate_requested = bool(row[0]), bool(row[1])
        entries = dict(write.entries)
        if not (cancel_requested or terminate_requested):
            entries.update(write.guarded_entries)
        if entries:
            fields = [journal.get_field(name) for name in ("instance", "name", "document")]
            document = journal.get_field("document")
            suffix = connection.ops.on_conflict_suffix_sql(
                fields, OnConflict.UPDATE, [document.column], []
            )
            cursor.execute(
                f"INSERT INTO {journal.db_table} (instance_id, name, document) VALUES "
                + ", ".join(["(%s, %s, %s)"] * len(entries))
                + f" {suffix}",
                [
                    value
                    for name, entry in entries.items()
                    for value in (id, name, document.get_db_prep_save(entry, connection))
                ],
            )
        if wake_at is not _UNSET:
            changes["wake_at"] = write.now if cancel_requested else wake_at
        if changes:
            columns = [instances.get_field(name) for name in changes]
            cursor.execute(
                f"UPDATE {instances.db_table} SET "
                + ", ".join(f"{field.column} = %s" for field in columns)  # type: ignore[union-attr]
                + " WHERE id = %s",
                [
                    field.get_db_prep_save(value, connection)  # type: ignore[union-attr]
                    for field, value in zip(columns, changes.values(), strict=True)
                ]
                + [id],
            )
        return row[0], row[1], row[2]


@contextlib.contextmanager
def _mysql_transaction(connection: Any) -> Iterator[Any]:
    """A transaction for the store's own hand-written statements on MySQL/MariaDB.

    Inside the caller's atomic() it simply joins it. Otherwise START TRANSACTION ... COMMIT on
    a connection left in autocommit mode: the same transaction as atomic() gives, without the
    two round trips with which Django switches autocommit off and on again around it.
    """
    if connection.in_atomic_block or not connection.get_autocommit():
        with connection.cursor() as cursor:
            yield cursor
        return
    with connection.cursor() as cursor:
        cursor.execute("START TRANSACTION")
        try:
            yield cursor
        except BaseException:
            try:
                cursor.execute("ROLLBACK")
            except DatabaseError:
                pass  # a lost connection rolled back by itself; the first error says why
            raise
        cursor.execute("COMMIT")


_UNSET: Any = object()


def _mysql_claim(
    using: str,
    *,
    owner: str,
    token: str,
    now: Any,
    lease_until: Any,
    limit: int,
    workflows: list[tuple[str, int]],
) -> Any:
    """MySQL and MariaDB's claim by hand-written SQL in one transaction: lock the candidates
    (SKIP LOCKED), lease them, read them back and the last signal id. The ORM's version of the
    same statements cost about a quarter of a worker's time there."""
    from ..models import Signal, Status, WorkflowInstance

    connection = connections[using]
    table = WorkflowInstance._meta.db_table
    adapt = connection.ops.adapt_datetimefield_value
    with _mysql_transaction(connection) as cursor:
        ids = _mysql_candidates(connection, cursor, now, limit, workflows)
        if not ids:
            return [], 0
        marks = ", ".join(["%s"] * len(ids))
        # The due conditions again, as the other databases' claims have them.
        cursor.execute(
            f"UPDATE {table} SET lease_token = %s, lease_owner = %s, lease_until = %s, "
            f"runs = runs + 1, updated_at = %s, "
            f"status = CASE WHEN status = %s THEN status ELSE %s END "
            f"WHERE id IN ({marks}) AND wake_at <= %s AND (lease_until IS NULL OR lease_until < %s)",
            [
                token,
                owner,
                adapt(lease_until),
                adapt(now),
                Status.COMPENSATING,
                Status.RUNNING,
                *ids,
                adapt(now),
                adapt(now),
            ],
        )
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {Signal._meta.db_table}")
        last = int(cursor.fetchone()[0])
        columns = ", ".join(str(field.column) for field in WorkflowInstance._meta.concrete_fields)
        claimed = list(
            WorkflowInstance.objects.using(using).raw(
                f"SELECT {columns} FROM {table} WHERE lease_token = %s AND id IN ({marks}) "
                f"ORDER BY priority, wake_at, created_at, id",
                [token, *ids],
            )
        )
    return claimed, last


def fast_claim(using: str, **claim: Any) -> Any:
    """A claim without limits by hand-written SQL: (instances, last signal id), or
    NotImplemented where the store takes the ORM's path (SQLite). PostgreSQL does it in one
    statement, MySQL and MariaDB in one transaction. `claim`: owner, token, now, lease_until,
    limit, workflows (as store.instances.claim takes them)."""
    vendor = connections[using].vendor
    if vendor == "postgresql":
        return _pg_claim(using, **claim)
    if vendor == "mysql":
        return _mysql_claim(using, **claim)
    return NotImplemented


def _pg_claim(
    using: str,
    *,
    owner: str,
    token: str,
    now: Any,
    lease_until: Any,
    limit: int,
    workflows: list[tuple[str, int]],
) -> Any:
    """PostgreSQL's claim as one statement: pick the due candidates FOR UPDATE SKIP LOCKED,
    lease them, and return them with the last signal id.

    The last signal id comes from the statement's snapshot: a signal committed after it has a
    higher id, and the release's check for signals above the cursor catches it.
    """
    from ..models import Signal, Status, WorkflowInstance

    instances = WorkflowInstance._meta.db_table
    signals = Signal._meta.db_table
    columns = ", ".join(f"i.{field.column}" for field in WorkflowInstance._meta.concrete_fields)
    pairs = " OR ".join("(workflow = %s AND version = %s)" for _ in workflows)
    sql = (
        f"WITH picked AS (SELECT id FROM {instances} "
        f"WHERE wake_at <= %s AND (lease_until IS NULL OR (lease_until < %s "
        f"AND pg_try_advisory_xact_lock(%s, hashtext(id)))) AND ({pairs}) "
        f"ORDER BY priority, wake_at, created_at, id LIMIT %s FOR UPDATE SKIP LOCKED) "
        f"UPDATE {instances} AS i SET lease_token = %s, lease_owner = %s, lease_until = %s, "
        f"runs = i.runs + 1, updated_at = %s, "
        f"status = CASE WHEN i.status = %s THEN i.status ELSE %s END "
        f"FROM picked WHERE i.id = picked.id "
        f"RETURNING {columns}, (SELECT COALESCE(MAX(id), 0) FROM {signals}) AS last_signal_id"
    )
    params: list[Any] = [now, now, PG_LEASE_CLASS]  # see leaselocks.lapsed_lease_free
    for name, version in workflows:
        params += [name, version]
    params += [limit, token, owner, lease_until, now, Status.COMPENSATING, Status.RUNNING]
    claimed = list(WorkflowInstance.objects.using(using).raw(sql, params))
    claimed.sort(key=lambda i: (i.priority, i.wake_at, i.created_at, i.id))
    last = getattr(claimed[0], "last_signal_id", 0) if claimed else 0
    return claimed, last
