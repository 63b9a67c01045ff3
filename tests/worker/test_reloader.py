"""runworkflows under the autoreloader (on under DEBUG), as real processes: bad options stop it
before the reloader starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.worker.test_processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def environment(settings_directory: Path) -> dict[str, str]:
    """The test settings with DEBUG on (so the reloader is on), on the test database."""
    (settings_directory / "debug_settings.py").write_text(
        "from tests.settings import *  # noqa: F403\n\nDEBUG = True\n"
    )
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "debug_settings",
        "DB_NAME": connection.settings_dict["NAME"],  # the test database
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(settings_directory)]),
    }


def spawn_under_debug(settings_directory: Path, *args: str, **popen: Any) -> subprocess.Popen:
    """A runworkflows process under DEBUG (the reloader's parent, which starts the child that
    runs the worker); its output and error output piped together."""
    return subprocess.Popen(
        [sys.executable, "-m", "django", "runworkflows", *args],
        cwd=ROOT,
        env=environment(settings_directory),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--concurrency", "0"), "concurrency must be a positive integer, not 0."),
        (("--workflow", "nope"), "nope"),
    ],
)
def test_a_bad_option_under_debug_exits_1_before_the_reloader_starts(tmp_path, option, message):
    worker = spawn_under_debug(tmp_path, *option, start_new_session=True)
    try:
        output, _ = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:  # it waits: end the reloader's child too
            os.killpg(worker.pid, signal.SIGKILL)
            worker.communicate()
    assert worker.returncode == 1, output
    assert "CommandError: " in output and message in output
    assert "Traceback" not in output
    assert "Watching for file changes" not in output  # no reloader, no child
