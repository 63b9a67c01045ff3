"""The database's own routines (PostgreSQL's functions, MySQL's and MariaDB's stored
procedures), each created from the frozen text of one file of the package:
`<backend>/sql/<name>_v<N>.sql`, its one `CREATE` statement.

A routine's name in the database carries its version, as its file's does (`dw_final_write_v1`),
and a migration names the files it applies (0002_routines), so what a migration creates never
changes. A changed routine is a new file, the next version under a new name, applied by a new
migration (which drops the old one), and the backend then calls the new name. A file is never
edited once a migration names it.

On MySQL and MariaDB a procedure's parameters and variables have the types, character sets and
collations of the columns they are compared with or written to (an id compared under another
collation than its column's is an error there): the file names the column, `{table.column}`,
and its declared type is read from the database when the migration runs. A migration reads
files and the database only, never the backends' Python, which may change; the backend then
asks again whether the database has its routines (forget_routines()).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib.resources import files
from typing import Any

from . import backend

_COLUMN = re.compile(r"\{(\w+)\.(\w+)\}")
_CREATED = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)\s+(\w+)\s*(\([^)]*\))", re.IGNORECASE
)


def text(path: str) -> str:
    """The text of the routine file `path` (`<backend>/sql/<name>.sql`, relative to this
    package), as the installed package has it."""
    return files(__package__).joinpath(path).read_text(encoding="utf-8")


def create(schema_editor: Any, paths: Iterable[str]) -> None:
    """Create the routines of `paths` that are this connection's (under the folder of its
    backend: `postgresql/` or `mysql/`), in their order; none on the other databases."""
    for path in _own(schema_editor.connection, paths):
        statement = text(path)
        if _COLUMN.search(statement):
            statement = _COLUMN.sub(_types(schema_editor.connection, statement), statement)
        schema_editor.execute(statement, None)
    backend(schema_editor.connection.alias).forget_routines()


def drop(schema_editor: Any, paths: Iterable[str]) -> None:
    """Drop the routines that create() made of `paths`, in the reverse order."""
    for path in reversed(_own(schema_editor.connection, paths)):
        found = _CREATED.search(text(path))
        if found is None:
            raise ValueError(f"{path} has no CREATE FUNCTION or CREATE PROCEDURE statement.")
        kind, name, arguments = found.groups()
        # a function by its signature (PostgreSQL's may share a name), a procedure by its name
        routine = f"{name}{arguments}" if kind.upper() == "FUNCTION" else name
        schema_editor.execute(f"DROP {kind.upper()} IF EXISTS {routine}", None)
    backend(schema_editor.connection.alias).forget_routines()


def _own(connection: Any, paths: Iterable[str]) -> list[str]:
    """The paths under the folder of `connection`'s backend (its vendor's name)."""
    return [path for path in paths if path.split("/", 1)[0] == connection.vendor]


def _types(connection: Any, statement: str) -> Any:
    """A replacement for each `{table.column}` of `statement`: the column's type as a MySQL or
    MariaDB parameter or variable is declared, with its character set and collation."""
    tables = sorted({table for table, _ in _COLUMN.findall(statement)})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME, COLLATION_NAME "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
            f"AND TABLE_NAME IN ({', '.join(['%s'] * len(tables))})",
            tables,
        )
        declared = {
            (table, column): f"{type} CHARACTER SET {charset} COLLATE {collation}"
            if charset
            else type
            for table, column, type, charset, collation in cursor.fetchall()
        }

    def replace(match: re.Match[str]) -> str:
        column = (match.group(1), match.group(2))
        if column not in declared:
            raise ValueError(f"No column {column[0]}.{column[1]} for a routine's declaration.")
        return declared[column]

    return replace
