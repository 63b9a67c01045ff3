"""INSERTs by the ORM's own statements (its InsertQuery) with an ON CONFLICT of the caller's,
for the few inserts the backends leave to the ORM: one row or many."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections
from django.db.models import Model
from django.db.models.constants import OnConflict
from django.db.models.fields import AutoFieldMixin
from django.db.models.sql import InsertQuery


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
