from __future__ import annotations

from typing import Any

import django
from django.apps import AppConfig
from django.db.backends.signals import connection_created


def sqlite_pragmas(sender: Any, connection: Any, **kwargs: Any) -> None:
    """WAL and synchronous=NORMAL on each SQLite connection: Django 4.2's init_command."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")


class ShopConfig(AppConfig):
    """The cat-food shop of the tutorial: orders and the stand-ins for outside services."""

    name = "shop"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        if django.VERSION < (5, 1):  # later versions run OPTIONS["init_command"] (settings.py)
            connection_created.connect(sqlite_pragmas, dispatch_uid="shop-sqlite-pragmas")
