"""The app config: autodiscovers every installed app's workflows.py and registers the checks."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.module_loading import autodiscover_modules


class DjangoWorkflowsConfig(AppConfig):
    name = "django_workflows"
    label = "django_workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the system checks

        post_migrate.connect(_create_lock_rows, sender=self)
        autodiscover_modules("workflows")


def _create_lock_rows(using: str = "default", **kwargs: Any) -> None:
    """After migrate (and after a test database's flush, which empties every table): the signal
    lock's row, which MySQL and MariaDB lock in every signal and suspension. Created here, not by
    the first of many concurrent lockers."""
    from django.db import connections, router

    from .models import StoreLock
    from .store.vendor import SIGNAL_LOCK_NAME

    connection = connections[using]
    if connection.vendor != "mysql" or not router.allow_migrate_model(using, StoreLock):
        return
    if StoreLock._meta.db_table in connection.introspection.table_names():
        StoreLock.objects.using(using).get_or_create(name=SIGNAL_LOCK_NAME)
