"""Wake-ups without NOTIFY: a start, signal or update committed in another process reaches an
idle worker within its wake-up interval (50 ms), not its poll. The worker here polls every
30 seconds, so each test fails unless the wake-up reaches it (PostgreSQL's is its LISTEN)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Sum
from django.test import override_settings

import django_workflows as wf
from django_workflows.conf import get_settings
from django_workflows.models import WakeupCounter, WorkflowInstance
from django_workflows.store.backends import backend
from django_workflows.worker import wakeups as watcher
from tests.procapp.models import StepRun
from tests.worker.test_processes import spawn, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

WITHIN = 10.0  # seconds: a third of the 30-second poll, however slow the machine


def status(id: str) -> str | None:
    return WorkflowInstance.objects.filter(pk=id).values_list("status", flat=True).first()


@pytest.fixture
def idle_worker(tmp_path: Path):
    """A runworkflows process polling every 30 s, past its first claim and idle: the warm-up
    instance started before it (found by that first claim) has completed."""
    wf.start("process-order", {"seconds": 0}, id="warm-up")
    log = tmp_path / "worker.log"
    with log.open("w") as output:
        worker = spawn("--poll-interval", "30s", "--no-reload", output=output)
    try:
        wait_for(lambda: status("warm-up") == "completed", timeout=60, what="the warm-up")
        yield worker
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        finally:
            worker.kill()
    assert worker.returncode == 0, log.read_text()


def test_a_start_in_another_process_reaches_an_idle_worker_before_its_poll(idle_worker):
    wf.start("process-order", {"seconds": 0}, id="woken")
    wait_for(
        lambda: StepRun.objects.filter(instance_id="woken").exists(),
        timeout=WITHIN,
        what="the first step of a start, before the worker's 30-second poll",
    )


def test_a_signal_in_another_process_reaches_an_idle_worker_before_its_poll(idle_worker):
    wf.start("wake-on-signal", {}, id="waits")
    wait_for(lambda: status("waits") == "suspended", timeout=WITHIN, what="the wait")
    wf.signal("go", key="waits")
    wait_for(
        lambda: StepRun.objects.filter(instance_id="waits", step="after").exists(),
        timeout=WITHIN,
        what="the step after the signal, before the worker's 30-second poll",
    )


def test_an_update_in_another_process_reaches_an_idle_worker_before_its_poll(idle_worker):
    wf.start("wake-on-update", {}, id="waits-update")
    wait_for(lambda: status("waits-update") == "suspended", timeout=WITHIN, what="the wait")
    assert wf.update("waits-update", "go").accepted
    wait_for(
        lambda: StepRun.objects.filter(instance_id="waits-update", step="after").exists(),
        timeout=WITHIN,
        what="the step after the update, before the worker's 30-second poll",
    )


def watching(wake: threading.Event):
    """The wake-up watcher of the test database on a thread of its own, looking every 20 ms."""
    if backend(connection.alias).has_listen_notify:
        pytest.skip("PostgreSQL wakes the workers by NOTIFY, without counters")
    stop = threading.Event()
    thread = watcher.start_watcher(
        connection.alias, wake.set, stop, get_settings().worker.wakeup_interval, name="watcher"
    )
    assert thread is not None
    return stop, thread


@override_settings(DJANGO_WORKFLOWS={"WORKER": {"WAKEUP_INTERVAL": "20ms"}})
def test_the_watcher_wakes_at_a_start_and_not_at_other_writes():
    wake = threading.Event()
    stop, thread = watching(wake)
    try:
        wait_for(wake.is_set, timeout=WITHIN, what="the first look's wake-up")
        wake.clear()
        wf.start("process-order", {}, id="first")
        wait_for(wake.is_set, timeout=WITHIN, what="the wake-up at the start")
        wake.clear()
        # Writes that start nothing change the database (on SQLite its data_version), not the
        # counts: no wake-up.
        for n in range(5):
            StepRun.objects.create(instance_id=f"other-{n}", step="x", pid=0, started=0)
        assert not wake.wait(0.5)
        wf.start("process-order", {}, id="second")
        wait_for(wake.is_set, timeout=WITHIN, what="the wake-up at the second start")
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
    # On SQLite a start outside a transaction counts nothing: its row's rowid is the wake-up.
    assert WakeupCounter.objects.exists() is (connection.vendor != "sqlite")


def test_a_start_counts_its_wake_up_in_its_own_transaction():
    if backend(connection.alias).has_listen_notify or connection.vendor == "sqlite":
        pytest.skip("PostgreSQL notifies; on SQLite the new row's rowid is the wake-up")

    def counted() -> int:
        return WakeupCounter.objects.aggregate(total=Sum("count"))["total"] or 0

    before = counted()
    wf.start("process-order", {}, id="counted")
    wf.start("process-order", {}, id="counted")  # the same instance again: nothing to wake
    assert counted() == before + 1


@pytest.mark.parametrize("interval", ["5ms", 0])
def test_a_wake_up_interval_under_ten_milliseconds_is_refused(interval):
    with override_settings(DJANGO_WORKFLOWS={"WORKER": {"WAKEUP_INTERVAL": interval}}):
        with pytest.raises(ValueError, match=r"WORKER\['WAKEUP_INTERVAL'\].*10ms"):
            get_settings()


def test_no_watcher_with_a_wake_up_interval_of_none():
    with override_settings(DJANGO_WORKFLOWS={"WORKER": {"WAKEUP_INTERVAL": None}}):
        interval = get_settings().worker.wakeup_interval
    assert interval is None
    assert (
        watcher.start_watcher(connection.alias, lambda: None, threading.Event(), None, "w") is None
    )
