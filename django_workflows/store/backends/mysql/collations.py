"""Exact ids, names and keys on MySQL and MariaDB: their columns' NO PAD binary collation.

MySQL's and MariaDB's `utf8mb4_bin` compares bytes, but it is a PAD SPACE collation: under it
`"user-1 "` equals `"user-1"`, so a signal keyed `"user-1 "` would wake the wait for `"user-1"`.
The key columns use MariaDB's `utf8mb4_nopad_bin` or MySQL's `utf8mb4_0900_bin` instead, set on
the column whatever the database's default collation (PostgreSQL and SQLite compare exactly
already). The system check W002 names a key column on a collation that is not exact (a table
restored from elsewhere, or MySQL before 8.0.17); move_key_columns() moves them. Every function
here but key_columns is for a MySQL or MariaDB connection.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.checks import CheckMessage, Warning

MARIADB_EXACT = "utf8mb4_nopad_bin"  # MariaDB 10.2 and later
MYSQL_EXACT = "utf8mb4_0900_bin"  # MySQL 8.0.17 and later
PADDED_BINARY = "utf8mb4_bin"  # what MySQL before 8.0.17 has closest: exact but for trailing spaces


def collation_for(mariadb: bool, version: tuple[int, ...]) -> str:
    """The collation of a key column on MariaDB (`mariadb`) or MySQL of `version`."""
    if mariadb:
        return MARIADB_EXACT
    return MYSQL_EXACT if version >= (8, 0, 17) else PADDED_BINARY


def exact_collation(connection: Any) -> str:
    """The collation of a key column on this MySQL or MariaDB connection's database."""
    return collation_for(connection.mysql_is_mariadb, connection.mysql_version)


@dataclass(frozen=True)
class Column:
    """A column of the database, with its collation (None for a column that is not text)."""

    table: str
    name: str
    collation: str | None = None
    type: str = ""
    nullable: bool = True


@dataclass(frozen=True)
class ForeignKey:
    """A foreign key constraint of one column, as information_schema describes it."""

    name: str
    table: str
    column: str
    target_table: str
    target_column: str
    on_update: str
    on_delete: str


def key_columns(models: Iterable[Any]) -> set[tuple[str, str]]:
    """(table, column) of each id, name and key column of `models`: their KeyFields, and their
    foreign keys to a KeyField (models.KeyField, marked `exact_key`)."""
    found = set()
    for model in models:
        for field in model._meta.local_fields:
            target = field.target_field if field.many_to_one else field
            if getattr(target, "exact_key", False):
                found.add((model._meta.db_table, field.column))
    return found


def inexact_columns(connection: Any, models: Iterable[Any]) -> list[Column]:
    """The key columns of `models` (the tables that exist) whose collation does not compare
    exactly: PAD SPACE (trailing spaces ignored), or not binary (case ignored)."""
    wanted = key_columns(models)
    with connection.cursor() as cursor:
        found = _columns(cursor, {table for table, _ in wanted})
        padded = _padded(cursor, {c.collation for c in found if c.collation})
    return [
        column
        for column in found
        if (column.table, column.name) in wanted
        and (column.collation in padded or not _binary(column.collation))
    ]


def move_key_columns(
    schema_editor: Any, models: Iterable[Any], collation: str | None = None
) -> None:
    """Move every key column of `models` that is not on `collation` (default: the exact one)
    onto it, with the columns of the foreign keys from or to them (MySQL and MariaDB refuse a
    foreign key between columns of two collations, and to change a referenced column's
    collation: those constraints are dropped first and made again after). A no-op where every
    column is on it already."""
    connection = schema_editor.connection
    exact = collation or exact_collation(connection)
    wanted = key_columns(models)
    with connection.cursor() as cursor:
        tables = {table for table, _ in wanted}
        keys = [
            key
            for key in _foreign_keys(cursor, tables)
            if (key.table, key.column) in wanted or (key.target_table, key.target_column) in wanted
        ]
        wanted |= {(key.table, key.column) for key in keys}
        wanted |= {(key.target_table, key.target_column) for key in keys}
        columns = [
            column
            for column in _columns(cursor, {table for table, _ in wanted})
            if (column.table, column.name) in wanted and column.collation != exact
        ]
    if not columns:
        return
    moved = {(column.table, column.name) for column in columns}
    dropped = [
        key
        for key in keys
        if (key.table, key.column) in moved or (key.target_table, key.target_column) in moved
    ]
    quote = schema_editor.quote_name
    for key in dropped:
        schema_editor.execute(f"ALTER TABLE {quote(key.table)} DROP FOREIGN KEY {quote(key.name)}")
    for table in sorted({column.table for column in columns}):
        # One ALTER per table: one rebuild. MODIFY keeps the column's indexes; key columns
        # have no database default or comment to lose.
        changes = ", ".join(
            f"MODIFY {quote(column.name)} {column.type} CHARACTER SET utf8mb4 COLLATE {exact} "
            f"{'NULL' if column.nullable else 'NOT NULL'}"
            for column in columns
            if column.table == table
        )
        schema_editor.execute(f"ALTER TABLE {quote(table)} {changes}")
    for key in dropped:
        schema_editor.execute(
            f"ALTER TABLE {quote(key.table)} ADD CONSTRAINT {quote(key.name)} FOREIGN KEY "
            f"({quote(key.column)}) REFERENCES {quote(key.target_table)} "
            f"({quote(key.target_column)}) ON UPDATE {key.on_update} ON DELETE {key.on_delete}"
        )


def check_collations(
    alias: str, connection: Any, models: Iterable[Any], exact: str
) -> list[CheckMessage]:
    """W002: key columns on a PAD SPACE collation (`"a "` equals `"a"`) or one that is not
    binary, as tables restored from elsewhere may have them (`exact`: the exact one)."""
    columns = inexact_columns(connection, models)
    if not columns:
        return []
    listed = ", ".join(f"{c.table}.{c.name} ({c.collation})" for c in columns)
    if exact == PADDED_BINARY:
        hint = f"Use MySQL 8.0.17 or newer, whose {MYSQL_EXACT} compares exactly."
    else:
        hint = (
            f"Move each column named onto {exact}: `ALTER TABLE <table> MODIFY <column> "
            f"<its type> CHARACTER SET utf8mb4 COLLATE {exact} <NULL or NOT NULL>`, with the "
            f"foreign keys between them dropped first and made again after (MySQL and MariaDB "
            f"refuse a foreign key between columns of two collations)."
        )
    return [
        Warning(
            f"The workflow database {alias!r} compares {len(columns)} id, name and key "
            f"column(s) inexactly (trailing spaces or case ignored), so that a signal keyed "
            f'"user-1 " would wake the wait for "user-1": {listed}.',
            hint=hint,
            id="django_workflows.W002",
        )
    ]


def _columns(cursor: Any, tables: set[str]) -> list[Column]:
    """The text columns of `tables` in the current database."""
    if not tables:
        return []
    cursor.execute(
        "SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME, COLUMN_TYPE, IS_NULLABLE "
        "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
        f"AND COLLATION_NAME IS NOT NULL AND TABLE_NAME IN ({', '.join(['%s'] * len(tables))}) "
        "ORDER BY TABLE_NAME, ORDINAL_POSITION",
        sorted(tables),
    )
    return [
        Column(table, name, collation, type, nullable == "YES")
        for table, name, collation, type, nullable in cursor.fetchall()
    ]


def _foreign_keys(cursor: Any, tables: set[str]) -> list[ForeignKey]:
    """The foreign keys of the current database from or to one of `tables`."""
    if not tables:
        return []
    listed = ", ".join(["%s"] * len(tables))
    cursor.execute(
        "SELECT k.CONSTRAINT_NAME, k.TABLE_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_NAME, "
        "k.REFERENCED_COLUMN_NAME, r.UPDATE_RULE, r.DELETE_RULE "
        "FROM information_schema.KEY_COLUMN_USAGE k "
        "JOIN information_schema.REFERENTIAL_CONSTRAINTS r "
        "ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME "
        "AND r.TABLE_NAME = k.TABLE_NAME "
        "WHERE k.TABLE_SCHEMA = DATABASE() AND k.REFERENCED_TABLE_SCHEMA = DATABASE() "
        f"AND (k.TABLE_NAME IN ({listed}) OR k.REFERENCED_TABLE_NAME IN ({listed})) "
        "ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME",
        sorted(tables) * 2,
    )
    return [ForeignKey(*row) for row in cursor.fetchall()]


def _padded(cursor: Any, collations: set[str]) -> set[str]:
    """Which of `collations` are PAD SPACE: MySQL says so in information_schema.COLLATIONS'
    PAD_ATTRIBUTE; MariaDB, which lacks that column, names its NO PAD collations `*_nopad_*`."""
    if not collations:
        return set()
    cursor.execute(
        "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
        "'information_schema' AND TABLE_NAME = 'COLLATIONS' AND COLUMN_NAME = 'PAD_ATTRIBUTE'"
    )
    if not cursor.fetchone()[0]:
        return {collation for collation in collations if "_nopad_" not in collation}
    cursor.execute(
        "SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE PAD_ATTRIBUTE = "
        f"'PAD SPACE' AND COLLATION_NAME IN ({', '.join(['%s'] * len(collations))})",
        sorted(collations),
    )
    return {row[0] for row in cursor.fetchall()}


def _binary(collation: str | None) -> bool:
    """Whether a collation compares bytes (case and accents included)."""
    return collation is not None and (collation == "binary" or collation.endswith("_bin"))
