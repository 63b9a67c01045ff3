"""PostgreSQL: the lease holder's write functions called through libpq itself, on the
connection psycopg already holds (psycopg's documented `Connection.pgconn`), rather than a
cursor.

A cursor's execute() runs psycopg's Python machinery around the round trip (the query's
conversion, its parameters' dumpers, the prepared-statement bookkeeping, the result's loaders),
four times per three-step workflow. The write functions take text and return one row of two
booleans and a text, so their call needs none of it: the parameters go as text, the row comes
back as text, and the same server-side function runs with the same parameters (65-85 us of the
worker's CPU per call against 76-108 us on a kept cursor; benchmarks/statement_cpu.py).

The call is psycopg's in every other way: the connection's encoding, its errors (raised from
the result as psycopg raises them, then made Django's as a cursor's are), libpq releasing the
GIL while it waits, and prepared statements where the connection takes them (a
`prepare_threshold` in the database's OPTIONS: each call outside a transaction, as the worker
makes them, prepared once per connection in the round trip of its first call; without one,
Django's default, none). A caller may ask for its call to be prepared whatever the OPTIONS say
(`prepare=True`: the lease holder's writes, which only a worker makes, and a worker needs a
session of its own, never a pooler's transaction). Such a call stays correct behind a pooler
that hands each transaction another session: a statement found there already (the name is
the text's hash, so it is the same statement) is used; one gone between its PREPARE and its
EXECUTE means the sessions change under the connection, which then prepares nothing more.
Where it cannot be the same, the cursor's way is taken (driver.fetch()): where Django logs or
wraps the statements, and in a transaction psycopg has yet to begin (it sends the BEGIN before
a cursor's first statement; a call here would run outside it)."""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from psycopg import errors, pq
from psycopg.types.json import Jsonb

from .. import driver

BOOLEAN: Callable[[str], bool] = "t".__eq__
"""A boolean column's text ("t" or "f") as a bool."""

TEXT: Callable[[str], str] = str

_local = threading.local()  # this thread's prepared calls: alias -> (connection, names)


def call_row(
    connection: Any,
    sql: str,
    params: Sequence[Any],
    columns: Sequence[Callable[[str], Any]],
    *,
    prepare: bool = False,
) -> tuple[Any, ...] | None:
    """The first row of `sql` (with `%s` placeholders, as a cursor takes it) run with `params`
    (text, None, datetimes, integers, booleans or Jsonb) on Django's PostgreSQL `connection`,
    each column converted from its text by `columns` (None stays None); None when it returns
    no row. Prepared outside a transaction where the connection takes prepared statements, or
    with `prepare`."""
    raw = _raw_connection(connection)
    if raw is None:
        found = driver.fetch(connection, sql, list(params))
        return tuple(found[0]) if found else None
    encoding = raw.info.encoding
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors:
        values = [_text(value, encoding) for value in params]
        result = None
        if raw.pgconn.transaction_status == pq.TransactionStatus.IDLE and (
            prepare or raw.prepare_threshold is not None  # None: Django's default, none wanted
        ):
            result = _exec_prepared(connection, raw, sql, values)
        if result is None:
            result = raw.pgconn.exec_params(_numbered(sql), values, result_format=0)
        _check(raw, result, pq.ExecStatus.TUPLES_OK, encoding)
    if result.ntuples == 0:
        return None
    row = (result.get_value(0, column) for column in range(result.nfields))
    return tuple(
        None if value is None else convert(value.decode(encoding))
        for value, convert in zip(row, columns, strict=True)
    )


def _raw_connection(connection: Any) -> Any:
    """psycopg's connection when a call may go to its libpq connection directly, else None:
    nothing logs or wraps the statements, and psycopg has no BEGIN to send first."""
    if not driver.direct(connection):
        return None
    if connection.connection is None:
        connection.ensure_connection()
    raw = connection.connection
    status = raw.pgconn.transaction_status
    if status == pq.TransactionStatus.INTRANS or (
        status == pq.TransactionStatus.IDLE and raw.autocommit
    ):
        return raw
    return None


def _exec_prepared(connection: Any, raw: Any, sql: str, values: list[bytes | None]) -> Any:
    """`sql` run with `values` as a statement prepared on `raw`, outside a transaction: prepared
    at its first call on the connection, in the same round trip (_prepare_and_execute()), and
    again if it is gone; None (to run it unprepared) on a connection whose session changes
    under it. psycopg deallocates every prepared statement of the connection (DEALLOCATE ALL)
    after a ROLLBACK, a DROP or an ALTER while it holds its own; outside a transaction the call
    that finds it gone changed nothing, and runs again once prepared anew. (Inside one its
    failure would abort the transaction: there the call is not prepared.)"""
    kept = getattr(_local, "prepared", None)
    if kept is None:
        kept = _local.prepared = {}
    entry = kept.get(connection.alias)
    if entry is None or entry[0] is not raw:
        entry = kept[connection.alias] = (raw, set[bytes]())
    names = entry[1]
    if _UNPREPARABLE in names:
        return None
    name = _name(sql)
    if name not in names:
        result = raw.pgconn.exec_(_prepare_and_execute(raw, name, sql, values))
        if result.error_field(pq.DiagnosticField.SQLSTATE) != _DUPLICATE_STATEMENT:
            if result.status != pq.ExecStatus.FATAL_ERROR:
                names.add(name)
            # On an error the statement may not be there: the next call prepares it again,
            # or finds it there, the same.
            return result
        # one of this name there already: the same text (the name is its hash), left by an
        # earlier client of a pooler's session; the EXECUTE did not run
        names.add(name)
    fresh = False
    while True:
        if name not in names:
            prepared = raw.pgconn.prepare(name, _numbered(sql))
            if prepared.error_field(pq.DiagnosticField.SQLSTATE) != _DUPLICATE_STATEMENT:
                _check(raw, prepared, pq.ExecStatus.COMMAND_OK, raw.info.encoding)
            names.add(name)
            fresh = True
        result = raw.pgconn.exec_prepared(name, values)
        if result.error_field(pq.DiagnosticField.SQLSTATE) != _NO_SUCH_STATEMENT:
            return result
        names.discard(name)
        if fresh:  # gone between its PREPARE and its EXECUTE: a pooler's transactions
            names.add(_UNPREPARABLE)
            return None


def _prepare_and_execute(raw: Any, name: bytes, sql: str, values: list[bytes | None]) -> bytes:
    """One simple query that prepares `sql` as `name` and executes it with `values`, each as
    the literal libpq escapes it: the server reads a literal with the input function a text
    parameter goes through. Its statements share one round trip and one transaction, where
    libpq's PREPARE and EXECUTE take one each (a worker's threads prepared about 20 statements
    in a 2,000-workflow drain: 0.01 transactions a workflow). A PREPARE is not undone with its
    transaction: it stays when the EXECUTE fails."""
    escaping = pq.Escaping(raw.pgconn)
    execute = b"EXECUTE " + name
    if values:
        literals = (
            b"NULL" if value is None else escaping.escape_literal(value) for value in values
        )
        execute += b"(" + b", ".join(literals) + b")"
    return b"PREPARE " + name + b" AS " + _numbered(sql) + b"; " + execute


_NO_SUCH_STATEMENT = b"26000"  # invalid_sql_statement_name
_DUPLICATE_STATEMENT = b"42P05"  # duplicate_prepared_statement
_UNPREPARABLE = b""  # in a connection's names: its session changes under it, prepare nothing


@functools.lru_cache(maxsize=64)
def _name(sql: str) -> bytes:
    return b"dw_" + hashlib.sha1(sql.encode()).hexdigest()[:16].encode()


def _check(raw: Any, result: Any, expected: Any, encoding: str) -> None:
    """Raise psycopg's error for `result` unless its status is `expected`."""
    if result.status == expected:
        return
    if raw.pgconn.status == pq.ConnStatus.BAD:  # the connection is lost: psycopg's error for it
        message = (result.error_message or raw.pgconn.error_message).decode(encoding)
        raise errors.OperationalError(message.strip() or "the connection was lost")
    raise errors.error_from_result(result, encoding=encoding)


@functools.lru_cache(maxsize=64)
def _numbered(sql: str) -> bytes:
    """`sql`'s `%s` placeholders as libpq's $1, $2... (the statements here hold no other `%`)."""
    parts = sql.split("%s")
    if any("%" in part for part in parts):
        raise ValueError(f"A statement for libpq holds a % other than its placeholders: {sql!r}")
    numbered = parts[0] + "".join(f"${n}{part}" for n, part in enumerate(parts[1:], 1))
    return numbered.encode()


def _text(value: Any, encoding: str) -> bytes | None:
    """A parameter as PostgreSQL's text input takes it (the server casts it to the function's
    argument type or the column's; a naive datetime is read in the session's time zone, as
    psycopg sends it). A JSON field's value (psycopg's Jsonb, as Django prepares it) is its
    JSON text, written by the function Django gave it, as psycopg writes it."""
    if value is None:
        return None
    if isinstance(value, str):
        if "\x00" in value:  # libpq would cut the text there; psycopg refuses it so
            raise errors.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        return value.encode(encoding)
    if isinstance(value, datetime.datetime):
        return value.isoformat().encode()
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, Jsonb):
        text = (value.dumps or json.dumps)(value.obj)
        return text.encode(encoding) if isinstance(text, str) else bytes(text)
    raise TypeError(
        f"A parameter for libpq must be text, None, a datetime, an integer, a boolean or a "
        f"Jsonb, not {value!r}."
    )
