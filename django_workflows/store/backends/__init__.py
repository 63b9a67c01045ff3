"""The backend of each database alias: the one place that picks a class by the connection's
vendor, once per alias.

The classes are named by dotted path, as Django's own database backends are in ENGINE: a
backend's module reads the models, and the models ask the backend for their key columns'
collation, so only the chosen one is imported, when first asked for.
"""

from __future__ import annotations

from typing import Any

from django.core.signals import setting_changed
from django.db import connections
from django.utils.module_loading import import_string

from .base import Backend

CLASSES = {
    "postgresql": "django_workflows.store.backends.postgresql.backend.PostgreSQLBackend",
    "mysql": "django_workflows.store.backends.mysql.backend.MySQLBackend",
    "sqlite": "django_workflows.store.backends.sqlite.SQLiteBackend",
}
"""The backend class of each Django vendor; any other database gets the base Backend."""

_backends: dict[str, Backend] = {}


def backend(using: str) -> Backend:
    """The backend of the database alias `using`, made the first time it is asked for.

    Raises django.utils.connection.ConnectionDoesNotExist for an alias not in DATABASES."""
    try:
        return _backends[using]
    except KeyError:
        pass
    path = CLASSES.get(connections[using].vendor)
    cls: type[Backend] = import_string(path) if path else Backend
    return _backends.setdefault(using, cls(using))


def _forget_backends(*, setting: str, **kwargs: Any) -> None:
    """DATABASES changed (override_settings): choose every alias's backend again."""
    if setting == "DATABASES":
        _backends.clear()


setting_changed.connect(_forget_backends)
