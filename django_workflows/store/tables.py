"""Whether the django_workflows tables on a database are as this code expects: the app's
migrations not applied there, for the commands that refuse to start on tables behind the code."""

from __future__ import annotations

from django.db import DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor


def pending_migrations(using: str) -> list[str]:
    """The names of the django_workflows migrations not applied on the database `using`, in the
    order `migrate` would apply them; empty when its tables are up to date."""
    executor = MigrationExecutor(connections[using])
    targets = [key for key in executor.loader.graph.leaf_nodes() if key[0] == "django_workflows"]
    return [
        migration.name
        for migration, _ in executor.migration_plan(targets)
        if migration.app_label == "django_workflows"
    ]


TABLE_PREFIX = "django_workflows_"
"""What the name of every table of the app starts with (Django's <app label>_<model>)."""


def missing_tables_error(error: DatabaseError, using: str) -> str | None:
    """What to say when `error` is a database's "no such table" about one of the app's tables
    (SQLite's "no such table", PostgreSQL's "relation ... does not exist", MySQL's "Table ...
    doesn't exist"): the migrations are not applied. None for any other error. It reads only the
    error's text: after such an error, a PostgreSQL transaction can run no other query."""
    text = str(error).lower()
    if TABLE_PREFIX not in text or not any(
        words in text for words in ("no such table", "does not exist", "doesn't exist")
    ):
        return None
    return (
        f"The django_workflows tables are missing on the database {using!r}: run "
        f"`python manage.py migrate` (with `--database {using}` for another alias than "
        f"default) before starting workflows."
    )
