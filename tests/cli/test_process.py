"""`manage.py workflows ...` as a shell runs it: its exit status (0 done, 1 refused, unknown or
bad input, 2 a usage error), its output and its error output, in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

import django_workflows as wf

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def shell(*args: str) -> subprocess.CompletedProcess[str]:
    """`manage.py workflows *args` in a process of its own, on the test database."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": connection.settings_dict["NAME"],  # the test database
        "PYTHONPATH": str(ROOT),
        "COLUMNS": "80",
    }
    return subprocess.run(
        [sys.executable, "-m", "django", "workflows", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_exit_status_says_whether_every_id_was_done(define):
    define("cli-nap")(lambda ctx, input: ctx.sleep("nap", "1h"))
    wf.start("cli-nap", None, id="nap-1")
    wf.start("cli-nap", None, id="nap-2")

    listed = shell("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [d["id"] for d in json.loads(listed.stdout)] == ["nap-1", "nap-2"]

    done = shell("cancel", "nap-1")
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "nap-1: cancel requested; a worker applies it.\n",
        "",
    )
    refused = shell("cancel", "nap-1", "nap-2", "nope")
    assert refused.returncode == 1
    assert refused.stdout == "nap-2: cancel requested; a worker applies it.\n"
    assert refused.stderr.splitlines() == [
        "Refused: nap-1 is being cancelled already.",
        "No workflow instance has the id 'nope'.",
    ]

    bad = shell("list", "--status", "stuck")
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr.startswith("CommandError: Unknown status 'stuck'")

    usage = shell("list", "--limit", "many")
    assert usage.returncode == 2
    assert "usage:" in usage.stderr and "invalid int value: 'many'" in usage.stderr
    assert "Traceback" not in bad.stderr + usage.stderr + refused.stderr


@pytest.mark.django_db(transaction=False)
def test_a_database_without_the_tables_is_a_command_error(tmp_path):
    # A fresh SQLite file (the settings put it in TMPDIR): no migration ever ran there.
    environment = {**os.environ, "DB": "sqlite", "TMPDIR": str(tmp_path), "CODEC": ""}
    environment["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    finished = subprocess.run(
        [sys.executable, "-m", "django", "workflows", "cancel", "x"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 1
    assert "CommandError: The django_workflows tables on database 'default' are missing" in (
        finished.stderr
    )
    assert "Traceback" not in finished.stderr
