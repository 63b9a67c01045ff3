"""result() and start_and_wait(): the reference's "Wait for a result"."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from django_workflows.worker import Worker


@pytest.fixture
def worker() -> Iterator[Worker]:
    """A real Worker.run() in a thread of its own, stopped after the test."""
    running = Worker(id="result-worker", poll_interval="0.2s")
    errors: list[BaseException] = []

    def run() -> None:
        try:
            running.run()
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run, name="result-worker", daemon=True)
    thread.start()
    yield running
    running.stop(timeout="5s")
    thread.join(15)
    assert not thread.is_alive(), "the worker did not stop"
    assert not errors, errors


@pytest.mark.django_db
def test_result_returns_the_output_of_a_completed_instance(workflow_clock, world):
    wf.start("ops-two-steps", {}, id="done")
    wf.drain()
    assert wf.result("done") == {"reservation": "done:reserve", "charge": "ch_1"}
    assert wf.result("done", timeout="1s") == {"reservation": "done:reserve", "charge": "ch_1"}


@pytest.mark.django_db(transaction=True)
def test_result_waits_for_an_instance_a_worker_in_another_thread_runs(world, worker):
    wf.start("ops-quick", {"seconds": 0.5, "echo": "hi"}, id="quick")
    started = time.monotonic()
    assert wf.result("quick", timeout="20s") == {"echo": "hi"}
    waited = time.monotonic() - started
    assert wf.get_status("quick").status == "completed"
    assert waited < 5, f"result() took {waited:.2f}s after the instance completed"


@pytest.mark.django_db(transaction=True)
def test_result_returns_soon_after_the_instance_completes(world, worker):
    wf.start("ops-quick", {"seconds": 2, "echo": 1}, id="slow")
    started = time.monotonic()
    assert wf.result("slow", timeout="20s") == {"echo": 1}
    waited = time.monotonic() - started
    assert 1.9 <= waited < 3.5, waited  # ends with the step, not a long poll later


@pytest.mark.django_db
def test_result_raises_workflow_failed_error_with_status_and_cause_for_a_failed_instance(
    workflow_clock, world
):
    world.failures["charge"] = 1
    wf.start("ops-two-steps", {}, id="failed")
    wf.drain()
    error = wf.get_status("failed").error
    with pytest.raises(wf.WorkflowFailedError) as raised:
        wf.result("failed", timeout=1)
    assert raised.value.status == "failed"
    assert raised.value.cause == error
    assert raised.value.cause["name"] == "StepFailedError"
    assert raised.value.instance_id == "failed"


@pytest.mark.django_db
def test_result_raises_workflow_failed_error_for_a_cancelled_instance(workflow_clock, world):
    wf.start("wait-once", {"key": "k"}, id="cancelled")
    wf.drain()
    wf.cancel("cancelled", "no longer needed")
    wf.drain()
    with pytest.raises(wf.WorkflowFailedError) as raised:
        wf.result("cancelled")
    assert raised.value.status == "cancelled"
    assert raised.value.cause["name"] == "WorkflowCancelledError"
    assert raised.value.cause["message"] == "no longer needed"


@pytest.mark.django_db
def test_result_raises_workflow_failed_error_for_a_terminated_instance(workflow_clock, world):
    wf.start("wait-once", {"key": "k"}, id="terminated")
    wf.drain()
    wf.terminate("terminated")
    wf.drain()
    with pytest.raises(wf.WorkflowFailedError) as raised:
        wf.result("terminated")
    assert raised.value.status == "cancelled"
    assert raised.value.cause["name"] == "WorkflowTerminatedError"


@pytest.mark.django_db
def test_result_raises_workflow_failed_error_for_a_compensation_failed_instance(
    workflow_clock, world
):
    world.failures["refund"] = 1000
    wf.start("ops-undo", {"fail": True}, id="undo")
    wf.drain()
    with pytest.raises(wf.WorkflowFailedError) as raised:
        wf.result("undo")
    assert raised.value.status == "compensation_failed"
    assert raised.value.cause == wf.get_status("undo").error
    assert raised.value.cause["compensation"]


@pytest.mark.django_db
def test_result_times_out_while_the_instance_keeps_running(workflow_clock, world):
    wf.start("wait-once", {"key": "k"}, id="waiting")
    wf.drain()
    started = time.monotonic()
    with pytest.raises(wf.WorkflowResultTimeoutError) as raised:
        wf.result("waiting", timeout=0.3)
    waited = time.monotonic() - started
    assert 0.3 <= waited < 2
    assert raised.value.instance_id == "waiting"
    assert raised.value.timeout == pytest.approx(0.3)
    assert wf.get_status("waiting").status == "suspended"
    wf.signal("ping", {"ok": 1}, key="k")
    wf.drain()
    assert wf.result("waiting") == {"ok": 1}


@pytest.mark.django_db
def test_result_of_an_unknown_id_raises_not_found():
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.result("nobody", timeout=1)


@pytest.mark.django_db(transaction=True)
def test_start_and_wait_returns_the_output(world, worker):
    output = wf.start_and_wait("ops-quick", {"echo": "sw"}, id="sw", wait_timeout="20s")
    assert output == {"echo": "sw"}
    assert wf.get_status("sw").status == "completed"


@pytest.mark.django_db(transaction=True)
def test_start_and_wait_for_an_existing_id_waits_for_that_instance(world):
    wf.start("ops-two-steps", {}, id="batch")
    wf.drain()
    assert wf.start_and_wait("ops-two-steps", {}, id="batch", wait_timeout=5) == {
        "reservation": "batch:reserve",
        "charge": "ch_1",
    }
    assert [kind for kind, _ in world.calls] == ["reserve", "charge"]  # not run again
    assert WorkflowInstance.objects.filter(pk="batch").count() == 1


@pytest.mark.django_db(transaction=True)
def test_start_and_wait_for_an_existing_running_id_waits_for_it_to_end(world, worker):
    wf.start("ops-quick", {"seconds": 1, "echo": "same"}, id="running-batch")
    assert wf.start_and_wait(
        "ops-quick", {"seconds": 1, "echo": "same"}, id="running-batch", wait_timeout="20s"
    ) == {"echo": "same"}


@pytest.mark.django_db(transaction=True)
def test_start_and_wait_raises_workflow_failed_error(world):
    world.failures["charge"] = 1

    def drain_soon() -> None:
        time.sleep(0.3)
        try:
            wf.drain()
        finally:
            connection.close()

    thread = threading.Thread(target=drain_soon, daemon=True)
    thread.start()
    with pytest.raises(wf.WorkflowFailedError) as raised:
        wf.start_and_wait("ops-two-steps", {}, id="sw-failed", wait_timeout="20s")
    thread.join(10)
    assert raised.value.status == "failed"


@pytest.mark.django_db(transaction=True)
def test_start_and_wait_is_refused_inside_atomic_and_starts_nothing(world):
    with pytest.raises(TypeError):
        with transaction.atomic():
            wf.start_and_wait("ops-quick", {}, id="in-atomic", wait_timeout=1)
    assert not WorkflowInstance.objects.filter(pk="in-atomic").exists()
    assert wf.get_status("in-atomic") is None
