"""Helpers of the tests of PostgreSQL's functions: whether one exists, its parameters' types and
a table's columns' types, and the notifications a listening connection (the `listening`
fixture) received."""

from __future__ import annotations

from typing import Any

from django.db import connection


def has_function(signature: str) -> bool:
    """Whether the database has the function of `signature`."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regprocedure(%s) IS NOT NULL", [signature])
        return bool(cursor.fetchone()[0])


def notified(raw: Any) -> int:
    """How many notifications `raw` received: 1 at most, waiting up to 2 seconds for it."""
    return len(list(raw.notifies(timeout=2, stop_after=1)))


def column_types(table: str) -> dict[str, str]:
    """The type of each column of `table`, as format_type() names it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, format_type(atttypid, NULL) FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            [table],
        )
        return dict(cursor.fetchall())


def parameter_types(signature: str) -> list[str]:
    """The types of the parameters of the function of `signature`, in order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format_type(t, NULL) FROM unnest((SELECT proargtypes::oid[] FROM pg_proc "
            "WHERE oid = to_regprocedure(%s))) AS t",
            [signature],
        )
        return [type for (type,) in cursor.fetchall()]
