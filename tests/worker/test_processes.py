"""Real runworkflows processes: SIGTERM hands back the instances stopped at a ctx call and
leaves those still inside a step to their lease; SIGKILL loses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from django_workflows.store import instances as store
from tests.procapp.models import Charge, StepRun

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def spawn(*args: str, output: Any = subprocess.PIPE) -> subprocess.Popen:
    """A runworkflows process on the test database; its output piped, or to `output` (a file,
    for a run that logs more than a pipe holds while nobody reads it)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": connection.settings_dict["NAME"],  # the test database
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "django", "runworkflows", *args],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(condition, timeout: float = 30.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"Timed out waiting for {what}.")


def sigterm_in_the_first_step(id: str, input: dict[str, Any], *, shutdown_timeout: str) -> str:
    """Start `id`, SIGTERM a worker once its first step runs; the worker's output (it exited 0)."""
    wf.start("process-order", input, id=id)
    worker = spawn(
        "--shutdown-timeout",
        shutdown_timeout,
        "--poll-interval",
        "200ms",
        "--lease-duration",
        "60s",
    )
    try:
        wait_for(lambda: StepRun.objects.filter(instance_id=id).exists(), what="the first step")
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=20)
    finally:
        worker.kill()
    assert worker.returncode == 0, output
    return output


def claim_now() -> list[str]:
    """The ids a claim of process-order instances leases now."""
    now = datetime.now(UTC)
    claim = store.claim(
        connection.alias,
        owner="test",
        token="t",
        now=now,
        lease_until=now,
        limit=5,
        workflows=[("process-order", 1)],
    )
    return [instance.id for instance in claim.instances]


def test_sigterm_hands_a_stopped_instance_back_at_once():
    output = sigterm_in_the_first_step("long-1", {"seconds": 60}, shutdown_timeout="5s")
    assert "handed back" in output
    row = WorkflowInstance.objects.get(pk="long-1")
    assert row.lease_token is None and row.status == "suspended"
    # Claimable again now, not once the 60-second lease would have expired.
    assert claim_now() == ["long-1"]


def test_sigterm_leaves_an_instance_whose_step_outlasts_the_shutdown_timeout_to_its_lease():
    # The step never looks at step.cancelled: after the shutdown timeout the process exits
    # without waiting for the step, and the instance keeps its lease until it expires, as after
    # a crash; nothing hands it back while its step might still run.
    input = {"seconds": 60, "stoppable": False}
    output = sigterm_in_the_first_step("stuck-1", input, shutdown_timeout="1s")
    assert "still inside a step" in output and "left to their lease" in output, output
    row = WorkflowInstance.objects.get(pk="stuck-1")
    assert row.lease_token is not None and row.status == "running"
    assert row.lease_until > datetime.now(UTC)  # the 60-second lease
    # The first step's start rides with the execution's first write, which never came: the
    # claim stands for it, and the next execution counts it as an attempt that stopped.
    assert not row.entries.filter(name="charge").exists() and row.runs == 1
    assert StepRun.objects.get(instance_id="stuck-1").finished is None
    assert claim_now() == []


def test_three_processes_share_thirty_orders_and_survive_a_sigkill():
    if connection.vendor == "sqlite":
        pytest.skip(
            "SQLite: one worker process is the supported set-up (SQLite serializes writers)"
        )
    for n in range(30):
        wf.start("process-order", {"seconds": 0.05}, id=f"order-{n:02d}")
    options = ("--concurrency", "4", "--lease-duration", "2s", "--poll-interval", "200ms")
    workers = [spawn(*options) for _ in range(3)]
    try:
        wait_for(lambda: Charge.objects.count() >= 8, what="some charges")
        victim = workers[0]
        victim.kill()  # SIGKILL: no hand-back, its leases must expire
        victim.wait(10)
        killed_at = time.time()
        wait_for(
            lambda: WorkflowInstance.objects.filter(status="completed").count() == 30,
            timeout=90,
            what="all 30 orders to complete",
        )
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        for worker in workers:
            try:
                worker.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
    assert Charge.objects.count() == 30  # each order charged once, by its idempotency key
    # No instance was ever executed by two processes at once.
    for n in range(30):
        runs = list(StepRun.objects.filter(instance_id=f"order-{n:02d}").order_by("started"))
        for before, after in zip(runs, runs[1:], strict=False):
            if before.pid != after.pid:
                ended = before.finished if before.finished is not None else killed_at
                assert ended <= after.started, (n, before.pid, after.pid)
    assert len({run.pid for run in StepRun.objects.all()}) >= 2


def test_a_start_in_another_process_wakes_a_worker_at_once():
    worker = spawn("--poll-interval", "60s", "--lease-duration", "30s")
    try:
        time.sleep(3)  # let the worker start up, claim nothing, and LISTEN or watch
        started = time.monotonic()
        wf.start("process-order", {"seconds": 0}, id="woken")
        wait_for(
            lambda: WorkflowInstance.objects.get(pk="woken").status == "completed",
            timeout=20,
            what="the instance to complete",
        )
        # Well under the 60-second poll: the NOTIFY of the committed start() woke it, or
        # (SQLite, MySQL, MariaDB) its count in the wake-up counters.
        assert time.monotonic() - started < 10
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()


def test_a_worker_survives_the_database_dropping_its_connections(tmp_path):
    # As when the server restarts or a proxy cuts idle connections: every connection of the
    # worker process is killed mid-run. It reconnects; what it was running runs again once its
    # lease expires, and everything completes, each charge once.
    if connection.vendor == "sqlite":
        pytest.skip("SQLite: no server to drop connections")
    for n in range(10):
        wf.start("process-order", {"seconds": 0.3}, id=f"before-{n:02d}")
    log = tmp_path / "worker.log"
    with log.open("w") as output:
        worker = spawn("--poll-interval", "200ms", "--lease-duration", "3s", output=output)
    try:
        wait_for(lambda: StepRun.objects.count() >= 3, what="some steps to start")
        killed = kill_other_connections()
        assert killed >= 2  # at least the worker's claim and execution connections
        for n in range(10):
            wf.start("process-order", {"seconds": 0.05}, id=f"after-{n:02d}")
        wait_for(
            lambda: WorkflowInstance.objects.filter(status="completed").count() == 20,
            timeout=90,
            what="all 20 orders to complete",
        )
        assert worker.poll() is None, log.read_text()
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
    assert Charge.objects.count() == 20


def kill_other_connections() -> int:
    """Kill every connection to the test database but this one; how many."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return int(cursor.fetchone()[0])
        cursor.execute(
            "SELECT id FROM information_schema.processlist "
            "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        )
        ids = [row[0] for row in cursor.fetchall()]
        for id in ids:
            cursor.execute(f"KILL {int(id)}")
        return len(ids)
