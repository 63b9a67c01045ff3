"""The database server itself restarting under running workers: 60 three-step orders, two
`runworkflows` processes, the server restarted three times while they run. Every order
completes, no step body runs again after its completion was journaled, no compensation runs and
no worker exits.

Only a server that is the test's own may be restarted: the command that restarts it is given
in DB_RESTART_POSTGRES or DB_RESTART_MYSQL (`.ci/run` sets both for the servers it installs and
starts). Without it the test says so and skips; under CI=true it fails instead.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time

import pytest
from django.db import connection, connections
from django.db.utils import Error as DatabaseError

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.worker.test_processes import spawn

from .conftest import assert_each_step_ran_once, stop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("server")]

INSTANCES = 60
RESTARTS = 3
BOUND = 120.0  # seconds after the last restart for every order to complete


@pytest.fixture
def restart_command() -> list[str]:
    name = "DB_RESTART_POSTGRES" if connection.vendor == "postgresql" else "DB_RESTART_MYSQL"
    command = os.environ.get(name, "").strip()
    if not command:
        reason = (
            f"{name} is not set: this server is not the test's to restart. Set it to the "
            f"command that restarts the test's own {connection.vendor} server to run this test."
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return shlex.split(command)


def restart(command: list[str]) -> float:
    """Restart the server and wait until it answers again; the seconds that took."""
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    while True:
        connections.close_all()  # the test's own connections died with the server
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            return time.monotonic() - started
        except DatabaseError:
            if time.monotonic() - started > 120:
                raise
            time.sleep(0.2)


def test_every_order_completes_through_server_restarts(tmp_path, restart_command):
    notes = tmp_path / "notes.txt"
    notes.touch()
    ids = [f"restart-{n:03d}" for n in range(INSTANCES)]
    for id in ids:
        wf.start("storm-order", {"notes": str(notes), "seconds": 0.5}, id=id)
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    workers = []
    for log in logs:
        with log.open("w") as output:
            workers.append(spawn("--concurrency", "4", "--poll-interval", "200ms", output=output))
    try:
        # Both workers past their start-up checks (they refuse to start without a database)
        # and running orders: the restarts hit running workers.
        started = time.monotonic()
        while time.monotonic() - started < 60 and not (
            notes.read_text() and all(" runs " in log.read_text() for log in logs)
        ):
            time.sleep(0.05)
        completed_at_restarts = []
        for _ in range(RESTARTS):
            completed_at_restarts.append(
                WorkflowInstance.objects.filter(status="completed").count()
            )
            restart(restart_command)
            time.sleep(1.0)  # the workers run a while between restarts
        # The restarts came while the orders ran, not after.
        assert completed_at_restarts[0] < INSTANCES // 2, completed_at_restarts
        for worker, log in zip(workers, logs, strict=True):
            assert worker.poll() is None, log.read_text()[-5000:]
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            if WorkflowInstance.objects.filter(status="completed").count() == INSTANCES:
                break
            time.sleep(0.2)
    finally:
        stop(*workers)
    statuses = dict(WorkflowInstance.objects.values_list("id", "status"))
    assert statuses == {id: "completed" for id in ids}, [
        (id, status) for id, status in statuses.items() if status != "completed"
    ][:5]
    assert_each_step_ran_once(notes)
    # The workers said what happened while the server was away, and went on.
    said = "".join(log.read_text() for log in logs)
    assert "Claiming due instances failed; trying again." in said, said[-3000:]
