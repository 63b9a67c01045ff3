"""A connection-kill storm under a real worker process: every connection of the test database
but the test's own is killed every 0.1 s for 30 s while 100 instances run. A database fault is
never the workflow's: every instance completes, no compensation runs, no step body runs again
after its completion was journaled, and no attempt counts against a step that never failed."""

from __future__ import annotations

import time

import pytest

import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from tests.worker.test_processes import spawn

from .conftest import assert_each_step_ran_once, connections_of_this_database, interrupt, stop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("server")]

INSTANCES = 100
STORM_SECONDS = 30.0
EVERY = 0.1


def test_every_instance_completes_through_a_connection_kill_storm(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.touch()
    ids = [f"storm-{n:03d}" for n in range(INSTANCES)]
    for id in ids:
        wf.start("storm-order", {"notes": str(notes), "seconds": 0.05}, id=id)
    log = tmp_path / "worker.log"
    with log.open("w") as output:
        worker = spawn("--concurrency", "10", "--poll-interval", "100ms", output=output)
    kills = 0
    try:
        started = time.monotonic()
        while not notes.read_text() and time.monotonic() - started < 30:
            time.sleep(0.05)  # the worker runs (its start-up checks are not under test here)
        ends = time.monotonic() + STORM_SECONDS
        while time.monotonic() < ends:
            victims = connections_of_this_database()
            interrupt(victims, "connection")
            kills += len(victims)
            time.sleep(EVERY)
        assert worker.poll() is None, log.read_text()[-5000:]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if WorkflowInstance.objects.filter(status="completed").count() == INSTANCES:
                break
            time.sleep(0.2)
    finally:
        stop(worker)
    assert kills > 100  # the storm reached the worker
    statuses = dict(WorkflowInstance.objects.values_list("id", "status"))
    unfinished = WorkflowInstance.objects.exclude(status="completed")
    assert statuses == {id: "completed" for id in ids}, list(
        unfinished.values_list("id", "status", "error")[:3]
    )
    assert_each_step_ran_once(notes)
    for instance_id, name, document in JournalEntry.objects.values_list(
        "instance_id", "name", "document"
    ):
        # No attempt counted against a step that never failed.
        if document.get("kind") == "step":
            assert document["attempt"] == 1, (instance_id, name, document)
