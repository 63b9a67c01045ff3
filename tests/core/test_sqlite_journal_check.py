"""W005: the workflows' SQLite database is not in WAL mode; and the worker, at start-up, switching
a file in SQLite's default rollback journal to WAL.

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

    def open_file(
        journal_mode: str, name: str = "workflows.sqlite3", options: dict | None = None
    ) -> SQLiteBackend:
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
                ALIAS: {
                    "ENGINE": "django.db.backends.sqlite3",
                    "NAME": path,
                    "OPTIONS": options or {},
                },
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


def journal_mode(path) -> str:
    """The file's journal mode, as a new connection of another library finds it."""
    with sqlite3.connect(path) as raw:
        mode = raw.execute("PRAGMA journal_mode").fetchone()[0]
    raw.close()
    return mode


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


def test_the_worker_switches_a_file_in_the_default_rollback_journal_to_wal(sqlite_file, tmp_path):
    database = sqlite_file("delete")
    database.prepare_worker()
    assert journal_mode(tmp_path / "workflows.sqlite3") == "wal"  # kept in the file
    assert "django_workflows.W005" not in ids(database.check())
    with database.connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        assert cursor.fetchone()[0] == 2  # FULL, as the project left it: no durability traded


def test_the_worker_leaves_a_journal_mode_somebody_chose(sqlite_file, tmp_path, caplog):
    # Only WAL is kept in the file; another mode is a connection's (its init_command's).
    database = sqlite_file("delete")
    with database.connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode=TRUNCATE")
    database.prepare_worker()
    with database.connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "truncate"
    assert journal_mode(tmp_path / "workflows.sqlite3") == "delete"
    assert "django_workflows.W005" in ids(database.check())
    assert not [r for r in caplog.records if r.name == "django_workflows"]


def test_the_worker_leaves_a_wal_file_and_memory_alone(sqlite_file, tmp_path):
    sqlite_file("wal").prepare_worker()
    assert journal_mode(tmp_path / "workflows.sqlite3") == "wal"
    sqlite_file("memory").prepare_worker()  # no file: nothing to switch, no error


def test_a_switch_the_file_refuses_is_logged_and_the_worker_goes_on(sqlite_file, tmp_path, caplog):
    path = tmp_path / "workflows.sqlite3"
    database = sqlite_file("delete", options={"timeout": 0.2})
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process is writing
        other.execute("CREATE TABLE busy (id INTEGER)")
        with caplog.at_level("WARNING", logger="django_workflows"):
            database.prepare_worker()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert journal_mode(path) == "delete"
    (record,) = [r for r in caplog.records if r.name == "django_workflows"]
    assert record.levelname == "WARNING"
    assert ALIAS in record.getMessage() and "WAL" in record.getMessage()
    assert "django_workflows.W005" in ids(database.check())  # and the check still says so
