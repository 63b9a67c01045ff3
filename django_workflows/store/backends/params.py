"""The parameters of the store's hand-written INSERTs and UPDATEs: each value as the ORM's own
statement would send it, without compiling a query.

The ORM prepares every value of an INSERT field by field (pre_save, get_db_prep_save, then its
own checks for expressions) at every statement: for an instance's 36 columns that was about a
fifth of a `start()`'s CPU, and on SQLite half of a schedule tick's. Here a NULL, and a str,
int or bool in a column of that kind, are sent as they are (get_db_prep_save would hand them
back as they are, or as int()); anything else, a datetime or a JSON document, still goes
through the field's get_db_prep_save(), so each database receives what the ORM would have sent
it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Model
from django.db.models.constants import OnConflict
from django.db.models.fields import AutoFieldMixin

_PLAIN_TYPES: dict[str, type] = {
    "CharField": str,
    "TextField": str,
    "BooleanField": bool,
    "IntegerField": int,
    "BigIntegerField": int,
    "SmallIntegerField": int,
    "PositiveIntegerField": int,
    "PositiveBigIntegerField": int,
    "PositiveSmallIntegerField": int,
}
"""The fields whose values of this type (a str enum included) every database takes as they
are, by get_internal_type() (prepare)."""


def plain_kind(field: Any) -> type | None:
    """The type of a value `field` sends as it is (_PLAIN_TYPES), None if each goes through
    get_db_prep_save()."""
    return _PLAIN_TYPES.get(field.get_internal_type())


def prepare(field: Any, kind: type | None, value: Any, connection: Any) -> Any:
    """`value` as the ORM sends it for `field` (of plain_kind `kind`): a NULL, and a value of
    the plain kind, as they are; anything else through the field's get_db_prep_save(). A bool
    in an integer column is not plain: PostgreSQL would read it as a boolean."""
    if value is None or type(value) is kind or (kind is str and isinstance(value, str)):
        return value
    return field.get_db_prep_save(value, connection)


def prepared(fields: list[Any], changes: dict[str, Any], connection: Any) -> list[Any]:
    """prepare() of each value of `changes`, in the order of `fields` (pairs of a field and
    its plain_kind)."""
    return [
        prepare(field, kind, value, connection)
        for (field, kind), value in zip(fields, changes.values(), strict=True)
    ]


def _saved_by_field(field: Any) -> bool:
    """Whether the field sets its value as the row is saved (auto_now, auto_now_add)."""
    return bool(getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False))


def insert_unless_exists(objs: Sequence[Model], connection: Any) -> int:
    """INSERT the rows `objs`, of one model and with the same fields set, each unless its key
    exists (the database's own INSERT IGNORE, INSERT OR IGNORE or ON CONFLICT DO NOTHING, as
    the ORM writes it), in as few statements as the database's parameter limit allows. Returns
    how many it inserted."""
    rows = [row_values(obj, connection) for obj in objs]
    return insert_rows_unless_exist(type(objs[0]), rows, connection, _auto_pk_unset(objs[0]))


def row_values(obj: Model, connection: Any) -> list[Any]:
    """`obj`'s row as insert_unless_exists() sends it, one value a column (field_index() tells
    which): prepared before the INSERT, which insert_rows_unless_exist() then sends."""
    _, _, _, fields, _ = _insert(connection, type(obj), _auto_pk_unset(obj))
    return [
        prepare(
            field,
            kind,
            field.pre_save(obj, True) if saved else getattr(obj, field.attname),
            connection,
        )
        for field, kind, saved in fields
    ]


def insert_head_and_suffix(model: type[Model], connection: Any) -> tuple[str, str]:
    """insert_rows_unless_exist()'s statement for `model` (its primary key set) up to VALUES,
    and after its rows."""
    head, _, suffix, _, _ = _insert(connection, model, False)
    return head, suffix


def row_fields(model: type[Model], connection: Any) -> list[Any]:
    """The fields of a row_values() row of `model` (its primary key set), in its order."""
    return _insert(connection, model, False)[4]


def field_index(model: type[Model], name: str, connection: Any) -> int:
    """Where the value of `model`'s field `name` is in a row_values() row (its primary key
    set)."""
    return [field.name for field in row_fields(model, connection)].index(name)


def insert_with(model: type[Model], name: str, expression: str, connection: Any) -> tuple[str, int]:
    """insert_unless_exists()'s statement for one row of `model` (its primary key set), with
    the SQL `expression` in place of field `name`'s parameter; and where that parameter is in a
    row_values() row, which the caller leaves out."""
    head, _, suffix, _, fields = _insert(connection, model, False)
    index = field_index(model, name, connection)
    values = ["%s"] * len(fields)
    values[index] = expression
    return f"{head}({', '.join(values)}){suffix}", index


def insert_rows_unless_exist(
    model: type[Model], rows: list[list[Any]], connection: Any, auto_pk_unset: bool = False
) -> int:
    """insert_unless_exists() of rows of `model` prepared by row_values() (`auto_pk_unset`:
    their primary key is an auto field left to the database)."""
    head, row, suffix, _, columns = _insert(connection, model, auto_pk_unset)
    size = max(1, connection.ops.bulk_batch_size(columns, rows))
    inserted = 0
    with connection.cursor() as cursor:
        for first in range(0, len(rows), size):
            batch = rows[first : first + size]
            params = [value for values in batch for value in values]
            cursor.execute(f"{head}{', '.join([row] * len(batch))}{suffix}", params)
            inserted += max(cursor.rowcount, 0)
    return inserted


def _auto_pk_unset(obj: Model) -> bool:
    """Whether `obj`'s primary key is an auto field still unset (the database numbers it)."""
    pk = obj._meta.pk
    return isinstance(pk, AutoFieldMixin) and getattr(obj, pk.attname) is None


_Insert = tuple[str, str, str, list[tuple[Any, type | None, bool]], list[Any]]
_inserts: dict[tuple[str, type[Model], bool], _Insert] = {}  # insert_unless_exists()'s, built once


def _insert(connection: Any, model: type[Model], auto_pk_unset: bool) -> _Insert:
    """insert_unless_exists()'s statement for `model` on `connection`'s database: its head (up to
    VALUES), one row's placeholders, its suffix, and the columns' fields (each with its
    plain_kind and whether it sets its value as the row is saved), and those fields alone."""
    key = (connection.vendor, model, auto_pk_unset)
    built = _inserts.get(key)
    if built is None:
        fields = [
            f
            for f in model._meta.local_concrete_fields
            if not getattr(f, "generated", False)
            and not (auto_pk_unset and isinstance(f, AutoFieldMixin))
        ]
        ops = connection.ops
        columns = ", ".join(ops.quote_name(str(f.column)) for f in fields)
        suffix = ops.on_conflict_suffix_sql(fields, OnConflict.IGNORE, [], [])
        built = _inserts[key] = (
            f"{ops.insert_statement(on_conflict=OnConflict.IGNORE)} "
            f"{ops.quote_name(model._meta.db_table)} ({columns}) VALUES ",
            f"({', '.join(['%s'] * len(fields))})",
            f" {suffix}" if suffix else "",
            [(f, plain_kind(f), _saved_by_field(f)) for f in fields],
            fields,
        )
    return built
