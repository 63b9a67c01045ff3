"""SQLite: one writer at a time for the whole file, the store's transactions taking the
database's write lock first; the ORM's generic paths for everything else."""

from __future__ import annotations

from typing import Any

import django
from django.core.checks import CheckMessage, Warning

from ...models import StoreLock
from .base import Backend


class SQLiteBackend(Backend):
    """SQLite: its database lock orders signals, limits and every write; no row locks, no
    SKIP LOCKED, no notifications."""

    serializes_writes = True

    def check(self) -> list[CheckMessage]:
        """W001: transactions that do not take the write lock at their start. W005: a database
        file not in WAL mode."""
        return self._check_transaction_mode() + self._check_journal_mode()

    def _check_transaction_mode(self) -> list[CheckMessage]:
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

    def _check_journal_mode(self) -> list[CheckMessage]:
        connection: Any = self.connection  # the SQLite DatabaseWrapper
        if connection.is_in_memory_db():
            return []  # one connection's database: nobody to share the file with
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            mode = str(cursor.fetchone()[0]).lower()
        if mode == "wal":
            return []
        if django.VERSION >= (5, 1):
            how = 'add "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL" to '
            how += "its OPTIONS"
        else:
            how = "run PRAGMA journal_mode=WAL and PRAGMA synchronous=NORMAL from a "
            how += "connection_created receiver"
        return [
            Warning(
                f"The workflow database {self.alias!r} is SQLite in journal mode {mode!r}, not "
                f"WAL: every commit then waits for the disk and readers wait for writers, so the "
                f"worker drains several times slower and the web process's reads stall.",
                hint=f"{how[0].upper()}{how[1:]} (see the how-to guide 'Run the worker').",
                id="django_workflows.W005",
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
