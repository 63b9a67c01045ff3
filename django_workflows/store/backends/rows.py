"""Instances read by a hand-written SELECT of every column, made into model instances as the
ORM makes them, without building a query for each read.

A raw queryset (Manager.raw) looks up the columns' converters again at every read and maps its
columns to fields by name; a claim's read-back of a few rows spends most of its CPU there. Here
the converters of each column (the database's, then the field's, as the compiler applies them)
are looked up once per connection, and each row goes through Model.from_db().
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import connections

from ...models import (
    InstanceAttribute,
    InstanceTag,
    JournalEntry,
    Wait,
    WorkflowInstance,
    WorkflowStream,
)

Converter = Callable[[Any, Any, Any], Any]

INSTANCE_COLUMNS = ", ".join(str(f.column) for f in WorkflowInstance._meta.concrete_fields)
"""Every column of an instance, in the order InstanceRows.instances() reads them."""

_ATTNAMES = [f.attname for f in WorkflowInstance._meta.concrete_fields]

RELATED = ("waits", "values", "tags", "attributes", "streams")
"""What an instance's status shows besides its row, each from a table of its own
(InstanceRows.with_related())."""


class InstanceRows:
    """Instances of one alias read by hand-written SELECTs (a claim's read-back, get(),
    with_entry(), with_related()), with the column converters of WorkflowInstance for each
    thread's connection."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self._local = threading.local()  # this thread's connection and its converters
        self._get_sql: str | None = None  # get()'s SELECT, built once
        self._with_entry_sql: str | None = None  # with_entry()'s
        self._with_related_sql: str | None = None  # and with_related()'s

    def _converters(self, connection: Any) -> list[tuple[int, list[Converter], Any]]:
        """The converters of each column of an instance on `connection`, looked up once per
        thread and connection (with the journal document's, _document_converters())."""
        local = self._local
        if getattr(local, "connection", None) is connection:
            return local.converters  # type: ignore[no-any-return]
        converters = []
        for index, field in enumerate(WorkflowInstance._meta.concrete_fields):
            column = field.get_col(WorkflowInstance._meta.db_table)
            functions = connection.ops.get_db_converters(column) + column.get_db_converters(
                connection
            )
            if functions:
                converters.append((index, functions, column))
        document = JournalEntry._meta.get_field("document").get_col(JournalEntry._meta.db_table)
        local.document = (
            connection.ops.get_db_converters(document) + document.get_db_converters(connection),
            document,
        )
        local.connection, local.converters = connection, converters
        return converters

    def _document_converters(self, connection: Any) -> tuple[list[Converter], Any]:
        """The converters of a journal entry's document on `connection`, and its column."""
        self._converters(connection)
        return self._local.document  # type: ignore[no-any-return]

    def instances(self, connection: Any, rows: Iterable[Sequence[Any]]) -> list[WorkflowInstance]:
        """The instances of `rows`, each a row of INSTANCE_COLUMNS read on `connection`."""
        converters = self._converters(connection)
        instances = []
        for row in rows:
            values = list(row)
            for index, functions, column in converters:
                value = values[index]
                for function in functions:
                    value = function(value, column, connection)
                values[index] = value
            instances.append(WorkflowInstance.from_db(self.alias, _ATTNAMES, values))
        return instances

    def get(self, id: str) -> WorkflowInstance | None:
        """The instance `id`, None for an unknown id: one SELECT, built once, on this thread's
        connection."""
        connection = connections[self.alias]
        if self._get_sql is None:
            table = WorkflowInstance._meta.db_table
            self._get_sql = f"SELECT {INSTANCE_COLUMNS} FROM {table} WHERE id = %s"
        with connection.cursor() as cursor:
            cursor.execute(self._get_sql, [id])
            row = cursor.fetchone()
        return None if row is None else self.instances(connection, [row])[0]

    def with_entry(self, id: str, name: str) -> tuple[WorkflowInstance, Any] | None:
        """The instance `id` and the document of its journal entry `name` (None while it has
        none), both as stored, read by one SELECT on this thread's connection; None for an
        unknown id. A task's get_result() reads them. Through the ORM, the entry in a subquery,
        a get_result() took 0.90 ms of the caller's CPU on PostgreSQL and 0.71 ms on SQLite;
        with this SELECT 0.16 and 0.08 ms (3,000 calls in a loop, as benchmarks/tasks.py
        times them)."""
        connection = connections[self.alias]
        if self._with_entry_sql is None:
            q = connection.ops.quote_name
            journal = JournalEntry._meta
            self._with_entry_sql = (
                f"SELECT {INSTANCE_COLUMNS}, (SELECT {q('document')} FROM {journal.db_table} "
                f"WHERE instance_id = %s AND {q('name')} = %s) "
                f"FROM {WorkflowInstance._meta.db_table} WHERE id = %s"
            )
        with connection.cursor() as cursor:
            cursor.execute(self._with_entry_sql, [id, name, id])
            row = cursor.fetchone()
        if row is None:
            return None
        [instance] = self.instances(connection, [row[:-1]])
        document = row[-1]
        if document is not None:
            functions, column = self._document_converters(connection)
            for function in functions:
                document = function(document, column, connection)
        return instance, document

    def with_related(self, id: str, value_prefix: str) -> tuple[WorkflowInstance, set[str]] | None:
        """The instance `id` and which of RELATED it has rows of, read by one SELECT on this
        thread's connection; None for an unknown id. "values": journal entries whose name
        starts with `value_prefix` (no LIKE wildcard in it). Each is an EXISTS on an index
        that starts with the instance's id: get_status() reads only the tables it names."""
        pattern = _starts_with(value_prefix)
        connection = connections[self.alias]
        if self._with_related_sql is None:
            exists = _related_exists(connection, "%s")
            self._with_related_sql = (
                f"SELECT {INSTANCE_COLUMNS}, {', '.join(exists.values())} "
                f"FROM {WorkflowInstance._meta.db_table} WHERE id = %s"
            )
        with connection.cursor() as cursor:
            cursor.execute(self._with_related_sql, [id, id, pattern, id, id, id, id])
            row = cursor.fetchone()
        if row is None:
            return None
        count = len(RELATED)
        [instance] = self.instances(connection, [row[:-count]])
        return instance, {name for name, found in zip(RELATED, row[-count:], strict=True) if found}

    def related_of(self, ids: Sequence[str], value_prefix: str) -> dict[str, set[str]]:
        """Which of RELATED each instance of `ids` has rows of (with_related()'s EXISTS), read
        by one SELECT of the instances by primary key; none for no ids. A list reads it for its
        page's ids after the page: in the page's own query, MariaDB ran the EXISTS for every
        row it sorted, not only for the page's (a page of a tag held by 20,000 of 200,000
        instances took 162-170 ms instead of 64-67 ms)."""
        if not ids:
            return {}
        connection = connections[self.alias]
        table = connection.ops.quote_name(WorkflowInstance._meta.db_table)
        exists = _related_exists(connection, f"{table}.{connection.ops.quote_name('id')}")
        marks = ", ".join(["%s"] * len(ids))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, {', '.join(exists.values())} FROM {table} WHERE id IN ({marks})",
                [_starts_with(value_prefix), *ids],
            )
            return {
                row[0]: {name for name, found in zip(RELATED, row[1:], strict=True) if found}
                for row in cursor.fetchall()
            }


def _related_exists(connection: Any, instance: str) -> dict[str, str]:
    """For each of RELATED, an EXISTS of its rows for the instance whose id `instance` is (a
    placeholder or a column), on its table's index by instance; "values" takes the LIKE
    pattern of the published values' names as its parameter."""
    name = connection.ops.quote_name("name")
    return {
        related: f"EXISTS (SELECT 1 FROM {model._meta.db_table} WHERE instance_id = {instance}{more})"
        for related, model, more in (
            ("waits", Wait, ""),
            ("values", JournalEntry, f" AND {name} LIKE %s"),
            ("tags", InstanceTag, ""),
            ("attributes", InstanceAttribute, ""),
            ("streams", WorkflowStream, ""),
        )
    }


@functools.lru_cache(maxsize=8)
def _starts_with(prefix: str) -> str:
    """The LIKE pattern of the names that start with `prefix`, which holds no wildcard."""
    if any(wildcard in prefix for wildcard in "%_\\"):
        raise ValueError(f"A prefix for LIKE without escaping, not {prefix!r}.")
    return f"{prefix}%"
