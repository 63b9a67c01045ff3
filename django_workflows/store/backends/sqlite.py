"""SQLite: one writer at a time for the whole file, the store's transactions taking the
database's write lock first; the ORM's generic paths for everything else."""

from __future__ import annotations

import threading
from typing import Any

import django
from django.core.checks import CheckMessage, Warning

from ...models import StoreLock
from .base import Backend


class SQLiteBackend(Backend):
    """SQLite: its database lock orders signals, limits and every write; no row locks, no
    SKIP LOCKED, no notifications."""

    serializes_writes = True
    wakeup_shards = 1  # one writer at a time anyway

    def __init__(self, alias: str) -> None:
        super().__init__(alias)
        self._seen = threading.local()  # each thread's last data_version and mark

    def wakeup_mark(self) -> Any:
        """The wake-up counts, read only when another connection committed to the file since
        this thread's last look (PRAGMA data_version, an in-memory check of the WAL index):
        an idle worker's look costs no read of the database at all."""
        with self.connection.cursor() as cursor:
            cursor.execute("PRAGMA data_version")
            version = cursor.fetchone()[0]
        seen = self._seen
        if getattr(seen, "version", None) != version or getattr(seen, "connection", None) is not (
            self.connection.connection
        ):
            seen.mark = super().wakeup_mark()
            seen.version = version
            seen.connection = self.connection.connection  # a new connection counts anew
        return seen.mark

    def check(self) -> list[CheckMessage]:
        """W001: transactions that do not take the write lock at their start."""
        mode = self.connection.settings_dict.get("OPTIONS", {}).get("transaction_mode")
        if django.VERSION < (5, 1) or mode == "IMMEDIATE":
            return []
        return [
            Warning(
                f"The workflow database {self.alias!r} is SQLite without "
                f'OPTIONS["transaction_mode"] = "IMMEDIATE": the worker\'s threads can then fail '
                f'with "database is locked" when two of them upgrade a read to a write at once.',
                hint='Set "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20}.',
                id="django_workflows.W001",
            )
        ]

    def take_write_lock(self) -> None:
        """Take the database's write lock at the start of a store transaction.

        A deferred transaction that reads first and writes later fails at once with "database
        is locked" when another connection writes meanwhile (SQLite cannot wait there without
        risking a deadlock); taking the write lock first makes it wait for its turn (the busy
        timeout) instead. Django 5.1+ does this for every transaction with
        OPTIONS["transaction_mode"] = "IMMEDIATE", and then this is a no-op; on Django 4.2 it
        is how the worker's threads share the file.
        """
        connection = self.connection
        if not connection.in_atomic_block:
            return
        if connection.settings_dict.get("OPTIONS", {}).get("transaction_mode") == "IMMEDIATE":
            return
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {StoreLock._meta.db_table} SET name = name WHERE 1 = 0")

    def lock_signals(self, *, shared: bool) -> None:
        """One writer at a time: the database's write lock orders signals and suspensions."""
        self.take_write_lock()

    def lock_names(self, names: list[str]) -> None:
        """One writer at a time: the write lock the claim took orders claims under limits."""
