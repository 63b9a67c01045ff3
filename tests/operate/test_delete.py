"""delete(): the reference's "Retry, delete or terminate" and the store contract's `delete`."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import JournalEntry, Wait, WorkflowInstance
from django_workflows.worker import Worker


def rows(id: str) -> tuple[int, int, int]:
    return (
        WorkflowInstance.objects.filter(pk=id).count(),
        JournalEntry.objects.filter(instance_id=id).count(),
        Wait.objects.filter(instance_id=id).count(),
    )


@pytest.mark.django_db
def test_delete_removes_a_finished_instance_with_its_journal(workflow_clock, world):
    wf.start("ops-two-steps", {}, id="done")
    wf.drain()
    assert wf.get_status("done").status == "completed"
    assert rows("done")[1] >= 2
    assert wf.delete("done") is True
    assert rows("done") == (0, 0, 0)
    assert wf.get_status("done") is None


@pytest.mark.django_db
@pytest.mark.parametrize("end", ["failed", "cancelled", "compensation_failed"])
def test_delete_removes_instances_of_every_finished_status(workflow_clock, world, end):
    if end == "failed":
        world.failures["charge"] = 1
        wf.start("ops-two-steps", {}, id="x")
        wf.drain()
    elif end == "cancelled":
        wf.start("wait-once", {"key": "k"}, id="x")
        wf.drain()
        wf.cancel("x")
        wf.drain()
    else:
        world.failures["refund"] = 1000
        wf.start("ops-undo", {"fail": True}, id="x")
        wf.drain()
    assert wf.get_status("x").status == end
    assert wf.delete("x") is True
    assert rows("x") == (0, 0, 0)


@pytest.mark.django_db
def test_delete_refuses_an_unfinished_instance_without_force(workflow_clock, world):
    wf.start("wait-once", {"key": "k"}, id="waiting")
    wf.drain()
    before = rows("waiting")
    assert before[0] == 1 and before[2] == 1
    with pytest.raises(wf.WorkflowStateError) as raised:
        wf.delete("waiting")
    assert raised.value.status_code == 409
    assert rows("waiting") == before
    assert wf.get_status("waiting").status == "suspended"


@pytest.mark.django_db
def test_delete_with_force_removes_an_unfinished_instance_with_its_waits_and_journal(
    workflow_clock, world
):
    wf.start("wait-once", {"key": "k"}, id="waiting")
    wf.drain()
    assert wf.delete("waiting", force=True) is True
    assert rows("waiting") == (0, 0, 0)


@pytest.mark.django_db
def test_delete_with_force_runs_no_compensations(workflow_clock, world):
    wf.start("ops-undo", {}, id="parked")  # charged, reserved, waits
    wf.drain()
    assert wf.get_status("parked").status == "suspended"
    assert wf.delete("parked", force=True) is True
    assert wf.drain() == 0
    assert not [kind for kind, _ in world.calls if kind in ("refund", "release")]
    assert rows("parked") == (0, 0, 0)


@pytest.mark.django_db
def test_delete_emits_workflow_deleted_with_the_status_it_had(workflow_clock, world, events):
    wf.start("wait-once", {"key": "k"}, id="waiting")
    wf.drain()
    wf.start("ops-two-steps", {}, id="done")
    wf.drain()
    wf.delete("waiting", force=True)
    wf.delete("done")
    deleted = [(e.id, e.workflow, e.data["status"]) for e in events if e.type == "workflow-deleted"]
    assert deleted == [
        ("waiting", "wait-once", "suspended"),
        ("done", "ops-two-steps", "completed"),
    ]


@pytest.mark.django_db
def test_delete_of_an_unknown_id_raises_not_found():
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.delete("nobody")
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.delete("nobody", force=True)


@pytest.mark.django_db(transaction=True)
def test_a_worker_holding_the_lease_finds_a_force_deleted_instance_gone(world, gates, caplog):
    wf.start("ops-hang", None, id="hanging")
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["ran"] = Worker(id="holder", lease_duration="30s").drain()
        except BaseException as error:  # reported below
            outcome["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=work, name="holder", daemon=True)
    thread.start()
    assert gates["entered"].wait(30), "the step never started"
    held = wf.get_status("hanging")
    assert held.status == "running" and held.lease_owner == "holder"
    assert wf.delete("hanging", force=True) is True
    gates["release"].set()
    thread.join(30)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert rows("hanging") == (0, 0, 0)  # nothing written back
    assert not [key for kind, key in world.calls if kind == "mail"]  # "after" never ran
    assert wf.drain() == 0
