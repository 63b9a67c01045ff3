"""What runworkflows prints in a project without LOGGING for it: plain lines on a terminal, a
failure's traceback once and readable, every other line one line, times in ISO 8601."""

from __future__ import annotations

import logging
import os
import pty
import subprocess
import sys
from datetime import timedelta

import pytest
from django.db import connection

import django_workflows as wf
from tests.worker.test_processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def on_a_terminal(*args: str) -> str:
    """`manage.py runworkflows *args` with a terminal for its output and error output, on the
    test database (whose settings give the package's logger no handler); what it printed."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": connection.settings_dict["NAME"],
        "PYTHONPATH": str(ROOT),
    }
    environment.pop("DJANGO_COLORS", None)
    environment.pop("NO_COLOR", None)
    terminal, side = pty.openpty()
    worker = subprocess.Popen(
        [sys.executable, "-m", "django", "runworkflows", *args],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=side,
        stderr=side,
    )
    os.close(side)
    printed = b""
    try:
        while True:
            try:
                chunk = os.read(terminal, 65536)
            except OSError:  # the terminal's other side closed: the process exited
                break
            if not chunk:
                break
            printed += chunk
        worker.wait(60)
    finally:
        os.close(terminal)
        if worker.poll() is None:
            worker.kill()
    return printed.decode().replace("\r\n", "\n")


def test_a_failure_prints_plain_lines_and_its_traceback_once():
    wf.start("non-retryable", None, id="declined-1")  # its step raises NonRetryableStepError
    printed = on_a_terminal("--once", "--no-reload")
    assert "Ran 1 execution(s)." in printed, printed
    # No terminal styling (not Django's red of errors). A bare reset is not styling: Django 4.2
    # with colorama installed writes one at exit, after every command.
    assert "\x1b[" not in printed.replace("\x1b[0m", "")
    assert printed.count("Traceback (most recent call last):") == 1, printed
    assert "raise NonRetryableStepError(\n" in printed  # readable: a line a frame
    [step_failed] = [line for line in printed.splitlines() if " step-failed " in line]
    assert step_failed.endswith(
        "step-failed declined-1 (non-retryable@1) step='charge-payment' attempt=1 "
        "error=NonRetryableStepError: The payment provider declined the card for order d. "
        "retry_at=None"
    )
    [workflow_failed] = [line for line in printed.splitlines() if " workflow-failed " in line]
    assert workflow_failed.endswith(
        "workflow-failed declined-1 (non-retryable@1) error=StepFailedError: Step "
        '"charge-payment" failed after 1 attempt: The payment provider declined the card for '
        "order d."
    )


def test_an_events_times_are_logged_in_iso_8601(define, workflow_clock, caplog):
    @define("log-nap")
    def nap(ctx, input):
        ctx.sleep("nap", "1h")

    with caplog.at_level(logging.DEBUG, logger="django_workflows"):
        wf.start("log-nap", None, id="nap-1")
        wf.drain()
    [suspended] = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("workflow-suspended")
    ]
    wake_at = (workflow_clock.now() + timedelta(hours=1)).isoformat()
    assert suspended == f"workflow-suspended nap-1 (log-nap@1) wake_at={wake_at} waits=[]"
