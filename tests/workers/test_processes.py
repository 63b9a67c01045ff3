"""Real processes: a runworkflows process registers itself; SIGKILL leaves its row, shown as gone
after three heartbeats; SIGTERM deletes it; `manage.py workflowstatus`, as a monitoring probe
runs it, exits 2 for a queue with a backlog and no live worker and 0 once a worker runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import WorkerProcess, WorkflowInstance
from django_workflows.worker.health import health
from tests.worker.test_processes import ROOT, spawn
from tests.workers.helpers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# A heartbeat of 0.5 s: gone 1.5 s after its last refresh.
WORKER = ("--lease-duration", "1500ms", "--poll-interval", "100ms")


def probe(*args: str) -> subprocess.CompletedProcess:
    """`manage.py workflowstatus` in a process of its own, on the test database."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": connection.settings_dict["NAME"],
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-m", "django", "workflowstatus", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def stop(worker: subprocess.Popen) -> str:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
    try:
        output, _ = worker.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        output, _ = worker.communicate()
    return output or ""


def test_a_killed_workers_row_stays_and_shows_as_gone_after_three_heartbeats():
    worker = spawn(*WORKER)
    try:
        wait_for(lambda: WorkerProcess.objects.filter(pid=worker.pid).exists(), what="its row")
        [live] = health().workers
        assert live.live and live.pid == worker.pid and live.heartbeat == 0.5
        seen = WorkerProcess.objects.get(pid=worker.pid).last_seen_at
        wait_for(
            lambda: WorkerProcess.objects.get(pid=worker.pid).last_seen_at > seen,
            what="a heartbeat",
        )
        worker.kill()  # SIGKILL: no clean exit, nothing deletes its row
        worker.wait(10)
        wait_for(lambda: not health().workers[0].live, what="the row shown as gone")
        [gone] = health().workers
        assert gone.id == live.id and not gone.live
        # A backlog now has no live worker: the probe's alert state.
        wf.start("process-order", {"seconds": 0}, id="after-the-kill")
        result = probe()
        assert result.returncode == 2, result.stdout + result.stderr
        assert "GONE" in result.stdout and "ALERT  default  due 1" in result.stdout
        assert "no live worker claims: default" in result.stderr
    finally:
        stop(worker)


def test_workflowstatus_exits_2_for_a_backlog_without_a_worker_then_0_once_one_runs():
    wf.start("process-order", {"seconds": 0}, id="waiting")
    result = probe("--json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert '"alerts": [\n    "default"\n  ]' in result.stdout
    worker = spawn(*WORKER)
    try:
        wait_for(
            lambda: WorkflowInstance.objects.get(pk="waiting").status == "completed",
            what="the instance to complete",
        )
        result = probe()
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Workers: 1 live, 0 gone." in result.stdout
    finally:
        output = stop(worker)
    assert worker.returncode == 0, output
    # A clean exit (SIGTERM) deletes its row.
    assert not WorkerProcess.objects.exists()
