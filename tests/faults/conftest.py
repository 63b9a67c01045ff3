"""Database faults injected for real, on the test's own database only: a statement cancelled
(pg_cancel_backend, KILL QUERY) or a connection killed (pg_terminate_backend, KILL)."""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
from django.db import connection
from django.db.utils import OperationalError

from django_workflows.models import JournalEntry

UNKNOWN_THREAD = 1094  # MySQL's and MariaDB's error for a KILL of a connection that is gone


@pytest.fixture
def server():
    """The tests that kill a server's statements or connections run on PostgreSQL and MariaDB."""
    if connection.vendor not in ("postgresql", "mysql"):
        pytest.skip("SQLite: no server whose statements or connections could be killed")


def lock_waiters() -> list[int]:
    """The connections to the test database that wait for a lock (not this one)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Inside a transaction the statistics views keep the snapshot of their first read:
            # drop it, or a waiter that came after that read is never seen.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' "
                "AND backend_type = 'client backend' AND usename = current_user"
            )
        else:
            # information_schema.innodb_trx misses a transaction begun by START TRANSACTION
            # whose first statement waits: a statement that runs for long enough waits here.
            cursor.execute(
                "SELECT id FROM information_schema.processlist WHERE db = DATABASE() "
                "AND id <> CONNECTION_ID() AND command = 'Query' AND time_ms > 300"
            )
        return [int(row[0]) for row in cursor.fetchall()]


def interrupt(ids: list[int], fault: str) -> None:
    """Cancel the statement of each connection (fault "statement") or kill the connection
    ("connection")."""
    with connection.cursor() as cursor:
        for id in ids:
            if connection.vendor == "postgresql":
                function = "pg_cancel_backend" if fault == "statement" else "pg_terminate_backend"
                cursor.execute(f"SELECT {function}(%s)", [id])
            else:
                try:
                    cursor.execute(f"KILL {'QUERY ' if fault == 'statement' else ''}{int(id)}")
                except OperationalError as error:
                    if error.args[0] != UNKNOWN_THREAD:
                        raise  # 1094: the connection ended between the list and the KILL


def interrupt_the_lock_waiter(fault: str, timeout: float = 20) -> int:
    """Wait until a connection waits for a lock this test holds, then interrupt it; its id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        waiters = lock_waiters()
        if waiters:
            interrupt(waiters, fault)
            return waiters[0]
        time.sleep(0.02)
    raise AssertionError(f"No connection waited for the test's lock within {timeout}s.")


def connections_of_this_database() -> list[int]:
    """Every other connection to the test database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
                "AND usename = current_user"
            )
        else:
            cursor.execute(
                "SELECT id FROM information_schema.processlist "
                "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
            )
        return [int(row[0]) for row in cursor.fetchall()]


def stop(*workers: subprocess.Popen) -> None:
    """SIGTERM each runworkflows process, then wait for it (killed after 30 s)."""
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()


def assert_each_step_ran_once(notes: Path) -> None:
    """From the notes of storm-order's steps (tests/procapp): no compensation ran, and no step
    body ran again once its completion was journaled."""
    runs: dict[tuple[str, str], list[float]] = {}
    for line in notes.read_text().splitlines():
        instance_id, what, at = line.split()
        runs.setdefault((instance_id, what), []).append(float(at))
    assert not [key for key in runs if key[1].startswith("undo-")], "a compensation ran"
    for instance_id, name, document in JournalEntry.objects.values_list(
        "instance_id", "name", "document"
    ):
        if document.get("kind") != "step" or (instance_id, name) not in runs:
            continue
        completed = datetime.fromisoformat(document["finished_at"]).timestamp()
        assert all(at <= completed for at in runs[(instance_id, name)]), (instance_id, name)
