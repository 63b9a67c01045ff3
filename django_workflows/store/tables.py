"""Whether the django_workflows tables on a database are as this code expects: the app's
migrations not applied there, for the commands that refuse to start on tables behind the code."""

from __future__ import annotations

from django.db import connections
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
