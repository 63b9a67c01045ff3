"""The app config: autodiscovers every installed app's workflows.py and registers the checks."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.module_loading import autodiscover_modules

from .store.backends import backend


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
    """After migrate (and after a test database's flush, which empties every table): the lock
    rows of the database's backend (MySQL and MariaDB lock the signal lock's row in every signal
    and suspension)."""
    backend(using).create_lock_rows()
