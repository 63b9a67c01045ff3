"""The collation of an id, name or key column on each database: what the models' KeyField asks
for when Django creates or alters the column. It stands apart from the backends, which import
the models."""

from __future__ import annotations

from typing import Any

from .mysql.collations import exact_collation as mysql_exact_collation


def exact_collation(connection: Any) -> str | None:
    """The collation under which `connection`'s database compares keys exactly; None where its
    comparisons are exact anyway (PostgreSQL, SQLite)."""
    if connection.vendor == "mysql":
        return mysql_exact_collation(connection)
    return None
