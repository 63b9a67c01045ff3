"""`manage.py workflows ...` as a shell runs it: its exit status (0 done, 1 refused, unknown or
bad input, 2 a usage error), its output and its error output, in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from django.db import connection

import django_workflows as wf

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def shell(*args: str, command: str = "workflows", columns: bool = True) -> CompletedProcess:
    """`manage.py workflows *args` (or another `command`) in a process of its own, on the test
    database; its output piped, and COLUMNS=80 unless not `columns`."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": connection.settings_dict["NAME"],  # the test database
        "PYTHONPATH": str(ROOT),
        "COLUMNS": "80",
    }
    if not columns:
        del environment["COLUMNS"]
    return subprocess.run(
        [sys.executable, "-m", "django", command, *args],
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


def test_djangos_own_options_are_taken_after_the_subcommand_too():
    django_options = ("--settings", "tests.settings", "--verbosity", "2", "--traceback")
    listed = shell("list", "--json", *django_options, "--no-color")
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, "[]\n", "")
    shown = shell("show", "nope", "-v", "0", "--force-color", "--skip-checks")
    assert shown.returncode == 1 and "No workflow instance has the id 'nope'." in shown.stderr
    assert shell("list", "--verbosity", "9").returncode == 2  # checked as before the subcommand


def test_a_piped_list_is_not_cut_to_a_terminals_width(define):
    name = "cli-" + "w" * 90
    define(name)(lambda ctx, input: None)
    wf.start(name, None, id="long-1")
    piped = shell("list", columns=False)
    assert piped.returncode == 0, piped.stderr
    [row] = piped.stdout.splitlines()[1:]
    assert row.startswith(f"long-1  {name}@1  pending") and "…" not in row
    assert "…" in shell("list").stdout  # COLUMNS, when set, is the width


def test_the_help_names_the_other_commands_of_the_app():
    helped = shell("--help")
    commands = ROOT / "django_workflows" / "management" / "commands"
    others = {p.stem for p in commands.glob("*.py")} - {"__init__", "workflows"}
    assert len(others) == 5
    text = " ".join(helped.stdout.split())
    for name in others:
        assert f"manage.py {name}" in text, name


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        ("workflows", ["list", "--database", "nope"], "--database nope: no such database"),
        ("workflows", ["cancel", "x", "--database", "nope"], "--database nope: no such database"),
        ("runworkflows", ["--once", "--database", "nope"], "--database nope: no such database"),
        ("purgeworkflows", ["--older-than", "1d", "--database", "nope"], "--database nope: no"),
        ("checkworkflows", ["--database", "nope"], "--database nope: no such database"),
        ("checkworkflows", ["--replay", "--database", "nope"], "--database nope: no such"),
        ("exportworkflow", ["x", "--database", "nope"], "--database nope: no such database"),
        ("workflowstatus", ["--database", "nope"], "--database nope: no such database"),
        ("purgeworkflows", ["--older-than", "3x"], "--older-than 3x: not a duration"),
        ("runworkflows", ["--poll-interval", "3x"], "--poll-interval 3x: not a duration"),
        ("runworkflows", ["--lease-duration", "1"], "--lease-duration 1: not a duration"),
        ("runworkflows", ["--shutdown-timeout", "x"], "--shutdown-timeout x: not a duration"),
        ("workflows", ["retry", "x", "--timeout", "3x"], "--timeout 3x: not a duration"),
    ],
)
def test_a_bad_database_or_duration_names_the_valid_forms(command, args, message):
    refused = shell(*args, command=command)
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.startswith(f"CommandError: {message}"), refused.stderr
    assert "Traceback" not in refused.stderr
    if "database" in message:
        assert "settings.DATABASES has default." in refused.stderr
    else:
        assert "give e.g. 30s, 5m, 2h, 7d or 1h30m" in refused.stderr
