"""get_value(timeout=...) waits for a value a worker publishes, in another thread, while the
instance goes on running or sleeps; on PostgreSQL the value's write sends the NOTIFY that wakes
a get_value() waiting in another process."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

import django_workflows as wf
from django_workflows.store.backends import backend
from django_workflows.store.backends.base import ENDED_CHANNEL
from django_workflows.store.instances import mark_awaited
from tests.helpers import wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hold():
    """An event a step waits on; set at the end of the test, so no step is left hanging."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def publishes_then_works(define, hold):
    @define("publishes-then-works")
    def run(ctx, input):
        ctx.step("prepare", lambda step: "ready")
        ctx.set_value("stage", {"at": "working"})
        # A long step right after: the value must not wait for this step's end to be stored.
        ctx.step("work", lambda step: hold.wait(30))
        ctx.set_value("stage", {"at": "done"})
        ctx.sleep("rest", "1h")
        return "rested"

    return run


def waiter(id: str, name: str, timeout: str) -> tuple[threading.Thread, list]:
    """get_value(id, name, timeout=timeout) in a thread of its own: what it returned or raised."""
    outcome: list = []

    def wait() -> None:
        try:
            outcome.append(wf.get_value(id, name, timeout=timeout))
        except BaseException as error:
            outcome.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread, outcome


def test_get_value_waits_for_a_value_published_while_the_next_step_runs(publishes_then_works, hold):
    wf.start("publishes-then-works", id="busy")
    thread, outcome = waiter("busy", "stage", "30s")
    with worker_thread(poll_interval="0.2s"):
        thread.join(30)
        assert outcome == [{"at": "working"}]
        assert not hold.is_set()  # the step after the value still runs
        assert wf.get_status("busy").values == {"stage": {"at": "working"}}
        hold.set()
        assert wait_until(lambda: wf.get_status("busy").status == "suspended", 10)
        # The instance sleeps for an hour: its last value is there all the same.
        assert wf.get_value("busy", "stage", timeout="5s") == {"at": "done"}


def test_a_waiting_get_value_times_out_and_the_instance_keeps_running(publishes_then_works, hold):
    wf.start("publishes-then-works", id="late")
    with worker_thread(poll_interval="0.2s"):
        assert wait_until(lambda: wf.get_status("late").values != {}, 10)
        with pytest.raises(wf.WorkflowResultTimeoutError):
            wf.get_value("late", "never", timeout="0.3s")
        assert wf.get_status("late").status == "running"
        hold.set()


def test_two_waiters_for_one_value_both_get_it(publishes_then_works, hold):
    wf.start("publishes-then-works", id="both")
    first, got_first = waiter("both", "stage", "30s")
    second, got_second = waiter("both", "stage", "30s")
    with worker_thread(poll_interval="0.2s"):
        first.join(30)
        second.join(30)
        hold.set()
    assert got_first == got_second == [{"at": "working"}]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="NOTIFY exists only on PostgreSQL")
def test_on_postgresql_publishing_an_awaited_instances_value_notifies_at_the_commit(define):
    """What wakes a get_value() waiting in another process: the instance's id on the channel
    result() listens to, sent with the value's write once a get_value() marked it awaited."""

    @define("publishes-to-listeners")
    def run(ctx, input):
        ctx.set_value("stage", 1)
        ctx.sleep("rest", "1h")

    wf.start("publishes-to-listeners", id="notified")
    mark_awaited("default", "notified")  # what a waiting get_value() does
    raw = connection.get_new_connection(connection.get_connection_params())
    try:
        raw.autocommit = True
        raw.execute(f"LISTEN {ENDED_CHANNEL}")
        assert wf.drain() == 1
        assert wf.get_status("notified").status == "suspended"  # the value's write, not an end
        payloads = [n.payload for n in raw.notifies(timeout=5, stop_after=1)]
    finally:
        raw.close()
    assert payloads == ["notified"]
    assert backend("default").has_listen_notify
