from __future__ import annotations

from typing import Any

import django
from django.apps import AppConfig
from django.db.backends.signals import connection_created


def sqlite_pragmas(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Django 4.2 has no OPTIONS["init_command"] for SQLite: run the tests' pragmas here, on
    the database files of the tests' settings (not on a file a test opens in a mode of its own,
    nor on the project of Django's defaults a test makes in a settings module of its own)."""
    from tests import settings

    files = {database["NAME"] for database in settings.DATABASES.values()}
    if connection.vendor == "sqlite" and connection.settings_dict["NAME"] in files:
        from tests.settings import SQLITE_PRAGMAS

        with connection.cursor() as cursor:
            for pragma in SQLITE_PRAGMAS.split(";"):
                cursor.execute(pragma)


class TestAppConfig(AppConfig):
    """An application for the tests' own models and workflows (its `workflows.py`)."""

    name = "tests.testapp"
    label = "testapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        if django.VERSION < (5, 1):
            connection_created.connect(sqlite_pragmas, dispatch_uid="tests-sqlite-pragmas")
