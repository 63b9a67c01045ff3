"""Orders started during a connection-kill storm, one worker process of four threads: every
connection of the test database but the test's own is killed every 0.1 s for 30 s while a new
order starts every 1.5 s. Every order completes well within a lease of the storm's end: a claim
whose answer the storm cut off (committed, then the connection killed) is handed back at the
worker's next claim, not left to lapse 30 s later."""

from __future__ import annotations

import time

import pytest
from django.db import connections

import django_workflows as wf
from django_workflows.models import WorkerProcess, WorkflowInstance
from tests.worker.test_processes import spawn, wait_for

from .conftest import assert_each_step_ran_once, connections_of_this_database, interrupt, stop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("server")]

ORDERS = 20
STORM_SECONDS = 30.0
EVERY = 0.1
AFTER = 15.0  # seconds after the storm for every order to complete: half the default lease


def start_through_the_storm(id: str, workflow: str, input: dict) -> None:
    """start() on the test's own connection, which the storm spares but may find broken."""
    for _ in range(50):
        try:
            wf.start(workflow, input, id=id)
            return
        except Exception:
            connections.close_all()
            time.sleep(0.05)
    raise AssertionError(f"Could not start {id} during the storm.")


def test_orders_started_during_a_storm_complete_soon_after_it(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.touch()
    log = tmp_path / "worker.log"
    with log.open("w") as output:
        worker = spawn("--concurrency", "4", "--poll-interval", "100ms", output=output)
    ids: list[str] = []
    try:
        # The worker is up: its start-up checks are not under test here.
        wait_for(lambda: WorkerProcess.objects.filter(pid=worker.pid).exists(), 60, "its row")
        ends = time.monotonic() + STORM_SECONDS
        rounds = 0
        # Until every order started: on a loaded machine the rounds take longer than EVERY.
        while time.monotonic() < ends or len(ids) < ORDERS:
            if rounds % 15 == 0 and len(ids) < ORDERS:
                id = f"started-{len(ids):02d}"
                if len(ids) % 2:
                    start_through_the_storm(
                        id, "storm-order", {"notes": str(notes), "seconds": 0.2}
                    )
                else:
                    start_through_the_storm(id, "atomic-order", {})
                ids.append(id)
            rounds += 1
            try:
                interrupt(connections_of_this_database(), "connection")
            except Exception:
                connections.close_all()
            time.sleep(EVERY)
        after = time.monotonic() + AFTER
        while time.monotonic() < after:
            if WorkflowInstance.objects.filter(status="completed").count() == len(ids):
                break
            time.sleep(0.2)
        assert worker.poll() is None, log.read_text()[-5000:]
    finally:
        stop(worker)
    assert len(ids) == ORDERS
    left = WorkflowInstance.objects.exclude(status="completed")
    assert not left.exists(), list(left.values_list("id", "status", "lease_until", "wake_at"))
    assert_each_step_ran_once(notes)
