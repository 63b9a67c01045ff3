"""A worker in this process registers its row when it starts serving, its renewer refreshes it
every heartbeat (last seen, running, executed), it registers again when the row was deleted,
survives a failed heartbeat write, and deletes the row when it stops cleanly."""

from __future__ import annotations

import logging
import os
import threading
from importlib import metadata

import pytest
from django.db import connection, connections

import django_workflows as wf
from django_workflows.models import WorkerProcess, WorkflowInstance
from django_workflows.store import workers as registry
from django_workflows.worker import Worker
from tests.helpers import worker_thread
from tests.worker.test_processes import kill_other_connections
from tests.workers.helpers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def row(id: str) -> WorkerProcess | None:
    return WorkerProcess.objects.filter(pk=id).first()


def test_a_worker_registers_refreshes_and_deletes_its_row(workflow_clock):
    started = workflow_clock.now()
    options = dict(id="w-1", concurrency=3, lease_duration="1500ms", poll_interval="50ms")
    with worker_thread(**options, workflows=["ops-quick"], queues=["default", "gpu"]):
        wait_for(lambda: row("w-1"), what="the worker's row")
        registered = row("w-1")
        assert registered.pid == os.getpid() and registered.host
        assert registered.queues == ["default", "gpu"]
        assert registered.workflows == ["ops-quick@1"]
        assert registered.concurrency == 3 and registered.heartbeat == 0.5
        assert registered.version == metadata.version("django-durable-workflows")
        assert registered.started_at == started == registered.last_seen_at
        assert (registered.running, registered.executed) == (0, 0)

        wf.start("ops-quick", {}, id="quick")
        wait_for(
            lambda: WorkflowInstance.objects.get(pk="quick").status == "completed",
            what="the instance to complete",
        )
        later = workflow_clock.advance("10s")
        # The next heartbeat: seen at the clock's time, with the execution it ran.
        wait_for(
            lambda: row("w-1").last_seen_at == later and row("w-1").executed == 1,
            what="a heartbeat",
        )
    assert row("w-1") is None  # a clean exit deletes it


def test_the_running_executions_are_counted_at_each_heartbeat(workflow_clock, define):
    release = threading.Event()

    @define("registry-hold")
    def hold(ctx, input):
        return ctx.step("hold", lambda step: release.wait(20))

    wf.start("registry-hold", None, id="held")
    try:
        with worker_thread(id="w-2", lease_duration="600ms", poll_interval="50ms"):
            wait_for(lambda: row("w-2") and row("w-2").running == 1, what="running = 1")
            release.set()
            wait_for(
                lambda: row("w-2").running == 0 and row("w-2").executed == 1,
                what="running = 0, executed = 1",
            )
    finally:
        release.set()


def test_a_worker_whose_row_was_deleted_registers_again(workflow_clock, caplog):
    caplog.set_level(logging.INFO, logger="django_workflows")
    with worker_thread(id="w-3", lease_duration="600ms", poll_interval="50ms"):
        wait_for(lambda: row("w-3"), what="the worker's row")
        started = row("w-3").started_at
        registry.unregister(connection.alias, "w-3")  # as purge() or the admin deletes it
        later = workflow_clock.advance("1m")
        wait_for(
            lambda: "Worker w-3 registered again" in caplog.text,
            what="the row written again",
        )
        wait_for(lambda: row("w-3").last_seen_at == later, what="a heartbeat")
        assert row("w-3").started_at == started  # the same worker, written again
    assert row("w-3") is None


def test_run_until_idle_registers_while_it_serves_and_drain_does_not(workflow_clock, define):
    seen = []

    @define("registry-count")
    def count(ctx, input):
        return ctx.step("count", lambda step: seen.append(WorkerProcess.objects.count()))

    wf.start("registry-count", None, id="once")
    assert Worker(id="w-once", lease_duration="3s").run_until_idle() == 1
    assert seen == [1] and row("w-once") is None  # runworkflows --once: a process, registered
    wf.start("registry-count", None, id="drained")
    wf.drain()  # in the caller's thread, for tests: not a worker process, no row
    assert seen == [1, 0]


def test_a_failed_heartbeat_write_is_logged_and_the_next_heartbeat_writes(workflow_clock, caplog):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite: no server to drop connections")
    caplog.set_level(logging.ERROR, logger="django_workflows")
    with worker_thread(id="w-4", lease_duration="1500ms", poll_interval="50ms") as worker:
        wait_for(lambda: row("w-4"), what="the worker's row")
        beat = workflow_clock.advance("1s")
        wait_for(lambda: row("w-4").last_seen_at == beat, what="a heartbeat")
        # Cut every connection of the worker: its renewer's next statement, the heartbeat
        # (nothing runs, so no lease renewal comes first), fails on its dead connection.
        connection.ensure_connection()
        assert kill_other_connections() >= 1
        wait_for(
            lambda: "could not refresh its row in the worker registry" in caplog.text,
            what="the failed heartbeat logged",
        )
        later = workflow_clock.advance("1m")
        wait_for(lambda: row("w-4").last_seen_at == later, what="a heartbeat after the fault")
        assert not worker._stopping.is_set()
    connections.close_all()
    assert row("w-4") is None
