"""The backend of each database alias: the one place that picks a class by the connection's
vendor, once per alias.

The classes are named by dotted path, as Django's own database backends are in ENGINE, and
imported when first asked for: a backend's module reads the models, and the models import
this package for their key columns' collation (collations.py), before the models exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.signals import setting_changed
from django.db import connections
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from .base import Backend

CLASSES = {
    "postgresql": "django_workflows.store.backends.postgresql.backend.PostgreSQLBackend",
    "mysql": "django_workflows.store.backends.mysql.backend.MySQLBackend",
    "sqlite": "django_workflows.store.backends.sqlite.SQLiteBackend",
}
"""The backend class of each Django vendor."""
GENERIC = "django_workflows.store.backends.base.Backend"
"""Any other database's: the ORM's body of each operation."""

_backends: dict[str, Backend] = {}


def backend(using: str) -> Backend:
    """The backend of the database alias `using`, made the first time it is asked for.

    Raises django.utils.connection.ConnectionDoesNotExist for an alias not in DATABASES."""
    try:
        return _backends[using]
    except KeyError:
        pass
    cls: type[Backend] = import_string(CLASSES.get(connections[using].vendor, GENERIC))
    return _backends.setdefault(using, cls(using))


def _forget_backends(*, setting: str, **kwargs: Any) -> None:
    """DATABASES changed (override_settings): choose every alias's backend again."""
    if setting == "DATABASES":
        _backends.clear()


setting_changed.connect(_forget_backends)
