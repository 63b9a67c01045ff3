"""A project on Django's own SQLite options (no OPTIONS at all): a real runworkflows process
switches the file from the rollback journal to WAL at start-up, and runs what is due."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(tmp_path: Path, *args: str) -> str:
    """manage.py `args` on the project of tmp_path's settings; its output (it must exit 0)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "default_sqlite_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def read(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as raw:
        rows = raw.execute(sql).fetchall()
    raw.close()
    return rows


def test_a_worker_on_djangos_default_sqlite_options_switches_the_file_to_wal(tmp_path):
    path = tmp_path / "project.sqlite3"
    (tmp_path / "default_sqlite_settings.py").write_text(
        "from tests.settings import *  # noqa: F403\n"
        f"DATABASES = {{'default': {{'ENGINE': 'django.db.backends.sqlite3', 'NAME': {str(path)!r}}}}}\n"
    )
    manage(tmp_path, "migrate", "--verbosity", "0")
    assert read(path, "PRAGMA journal_mode") == [("delete",)]  # Django's default
    manage(tmp_path, "shell", "-c", "import django_workflows as wf; wf.start('statuses', id='d')")

    manage(tmp_path, "runworkflows", "--once", "--no-reload")

    assert read(path, "PRAGMA journal_mode") == [("wal",)]  # kept in the file
    # The worker ran it: pending to suspended, asleep after its first custom status.
    assert read(path, "SELECT status FROM django_workflows_workflowinstance WHERE id = 'd'") == [
        ("suspended",)
    ]
