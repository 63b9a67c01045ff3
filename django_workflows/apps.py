"""The app config: autodiscovers every installed app's workflows.py, connects the receivers of
their start_on and signal_on, and registers the checks."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_migrate
from django.utils.module_loading import autodiscover_modules, import_string

from .store.backends import backend


class DjangoWorkflowsConfig(AppConfig):
    name = "django_workflows"
    label = "django_workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the system checks
        from .triggers import checks as _trigger_checks  # noqa: F401 - registers theirs
        from .triggers import connect_receivers

        post_migrate.connect(_create_lock_rows, sender=self)
        autodiscover_modules("workflows")
        _register_task_workflow()
        # After the workflows modules: their start_on and signal_on are all declared by now.
        connect_receivers()


def _register_task_workflow() -> None:
    """The built-in task workflow, where TASKS names WorkflowTaskBackend (or a subclass):
    only there do workers claim its instances."""
    configured = getattr(settings, "TASKS", None)
    if not isinstance(configured, dict):
        return
    for params in configured.values():
        path = params.get("BACKEND") if isinstance(params, dict) else None
        if not isinstance(path, str):
            continue
        if not path.startswith("django_workflows.tasks."):
            try:
                found = import_string(path)
            except ImportError:
                continue  # the framework's own check reports it
            bases = getattr(found, "__mro__", ())
            if not any(base.__module__.startswith("django_workflows.tasks") for base in bases):
                continue
        from .tasks.workflow import register

        register()
        return


def _create_lock_rows(using: str = "default", **kwargs: Any) -> None:
    """After migrate (and after a test database's flush, which empties every table): the lock
    rows of the database's backend (MySQL and MariaDB lock the signal lock's row in every signal
    and suspension)."""
    backend(using).create_lock_rows()
