"""A worker killed (SIGKILL) inside an atomic step, after its function returned and its journal
entry was written but before the transaction committed, leaves neither: the retry in another
worker writes the row once. Were the entry written outside the step's transaction, the kill
would leave the charge (or the completed entry) behind, and this test fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import JournalEntry
from tests.helpers import wait_until
from tests.procapp.models import Charge, StepRun

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def spawn(*args: str, pause_at: Path | None = None) -> subprocess.Popen:
    """A runworkflows process on the test database; with `pause_at`, one that stops inside its
    first atomic step's transaction, after the entry's write (tests/procapp/pause.py)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": connection.settings_dict["NAME"],  # the test database
        "PYTHONPATH": str(ROOT),
    }
    env.pop("DW_PAUSE_BEFORE_COMMIT", None)
    if pause_at is not None:
        env["DW_PAUSE_BEFORE_COMMIT"] = str(pause_at)
    return subprocess.Popen(
        [sys.executable, "-m", "django", "runworkflows", "--lease-duration", "2s", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop(worker: subprocess.Popen) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)


def test_a_worker_killed_before_the_commit_leaves_neither_the_row_nor_the_entry(tmp_path):
    wf.start("atomic-order", None, id="atomic-kill")
    paused = tmp_path / "paused"
    victim = spawn(pause_at=paused)
    try:
        assert wait_until(paused.exists, 60), "the worker never reached the atomic step's commit"
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
    finally:
        if victim.poll() is None:
            victim.kill()
    victim_pid = int(paused.read_text())
    # The function's rows and the completed entry went with the transaction.
    assert not Charge.objects.filter(order_id="atomic-kill").exists()
    assert not StepRun.objects.filter(instance_id="atomic-kill").exists()
    entry = JournalEntry.objects.get(instance_id="atomic-kill", name="charge").document
    assert entry["status"] == "running" and entry["attempt"] == 1  # the attempt's start only

    survivor = spawn()
    try:
        assert wait_until(lambda: wf.get_status("atomic-kill").status == "completed", 60), (
            wf.get_status("atomic-kill")
        )
    finally:
        stop(survivor)
    status = wf.get_status("atomic-kill", journal=True)
    charge = next(e for e in status.journal if e.name == "charge")
    assert charge.status == "completed" and charge.attempt == 2
    charges = list(Charge.objects.filter(order_id="atomic-kill"))
    assert len(charges) == 1 and charges[0].requests == 1  # written once
    runs = list(StepRun.objects.filter(instance_id="atomic-kill"))
    assert len(runs) == 1 and runs[0].pid not in (victim_pid, 0)
    assert status.output["pid"] == runs[0].pid
