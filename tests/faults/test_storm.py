"""A connection-kill storm under a real worker process: every connection of the test database
but the test's own is killed every 0.1 s for 30 s while 100 instances run. A database fault is
never the workflow's: every instance completes, no compensation runs, no step body runs again
after its completion was journaled, and no attempt counts against a step that never failed."""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import datetime

import pytest

import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from tests.worker.test_processes import spawn

from .conftest import connections_of_this_database, interrupt

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
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
    assert kills > 100  # the storm reached the worker
    statuses = dict(WorkflowInstance.objects.values_list("id", "status"))
    unfinished = WorkflowInstance.objects.exclude(status="completed")
    assert statuses == {id: "completed" for id in ids}, list(
        unfinished.values_list("id", "status", "error")[:3]
    )
    runs: dict[tuple[str, str], list[float]] = {}
    for line in notes.read_text().splitlines():
        instance_id, what, at = line.split()
        runs.setdefault((instance_id, what), []).append(float(at))
    assert not [key for key in runs if key[1].startswith("undo-")], "a compensation ran"
    for instance_id, name, document in JournalEntry.objects.values_list(
        "instance_id", "name", "document"
    ):
        if document.get("kind") != "step":
            continue
        # No attempt counted against a step that never failed...
        assert document["attempt"] == 1, (instance_id, name, document)
        # ...and no step body ran again once its completion was journaled.
        completed = datetime.fromisoformat(document["finished_at"]).timestamp()
        assert all(at <= completed for at in runs[(instance_id, name)]), (instance_id, name)
