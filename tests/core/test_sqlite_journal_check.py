"""W005: the workflows' SQLite database is not in WAL mode.

Each test opens a SQLite file of its own next to the test database (whatever DB the suite runs
on), in the journal mode it names, and runs the SQLite backend's checks on it.
"""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection, connections
from django.db.backends.sqlite3.base import DatabaseWrapper

from django_workflows.checks import check_database
from django_workflows.store.backends.sqlite import SQLiteBackend

ALIAS = "sqlite-journal-check"


@pytest.fixture
def sqlite_file(tmp_path, django_db_blocker):
    """A SQLite file in the journal mode asked for, as the alias ALIAS; closed afterwards."""
    opened = []

    def open_file(journal_mode: str, name: str = "workflows.sqlite3") -> SQLiteBackend:
        path = str(tmp_path / name)
        if journal_mode != "memory":
            with sqlite3.connect(path) as raw:
                assert raw.execute(f"PRAGMA journal_mode={journal_mode}").fetchone()[0] == (
                    journal_mode.lower()
                )
            raw.close()
        else:
            path = ":memory:"
        settings = connections.configure_settings(
            {
                "default": {"ENGINE": "django.db.backends.dummy"},
                ALIAS: {"ENGINE": "django.db.backends.sqlite3", "NAME": path},
            }
        )
        connections[ALIAS] = DatabaseWrapper(settings[ALIAS], ALIAS)
        opened.append(connections[ALIAS])
        return SQLiteBackend(ALIAS)

    with django_db_blocker.unblock():  # a file of its own, not the test database
        yield open_file
    for wrapper in opened:
        wrapper.close()
    if opened:
        del connections[ALIAS]


def ids(messages) -> list[str]:
    return [message.id for message in messages]


def test_a_sqlite_file_in_rollback_journal_mode_warns(sqlite_file):
    messages = sqlite_file("delete").check()
    assert "django_workflows.W005" in ids(messages)
    warning = next(m for m in messages if m.id == "django_workflows.W005")
    assert "'delete'" in warning.msg and ALIAS in warning.msg
    assert "journal_mode=WAL" in warning.hint


def test_a_sqlite_file_in_truncate_journal_mode_warns_too(sqlite_file):
    assert "django_workflows.W005" in ids(sqlite_file("truncate").check())


def test_a_sqlite_file_in_wal_mode_does_not_warn(sqlite_file):
    assert "django_workflows.W005" not in ids(sqlite_file("wal").check())


def test_an_in_memory_sqlite_database_does_not_warn(sqlite_file):
    assert "django_workflows.W005" not in ids(sqlite_file("memory").check())


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "sqlite", reason="the suite's database is not SQLite")
def test_the_test_suites_own_sqlite_database_is_in_wal_mode():
    assert "django_workflows.W005" not in ids(check_database(databases=["default"]))
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        assert cursor.fetchone()[0] == 1  # NORMAL
