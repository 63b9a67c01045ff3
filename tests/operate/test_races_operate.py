"""Races with real threads, each on its own connection: retry() against retry(), purge() and
delete() (store contract: `reopen` is one conditional write that locks the instance row;
`purge` re-checks its conditions on the rows it deletes).

They run on every database; SQLite serializes writers (IMMEDIATE transactions, a 30 s busy
timeout), so there the race is between whole transactions.
"""

from __future__ import annotations

import threading
import time

import pytest

import django_workflows as wf
from django_workflows.events import workflow_event
from django_workflows.models import JournalEntry, WorkflowInstance
from tests.races.conftest import race

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 8


def attempt_retry(id: str):
    def fn() -> str:
        try:
            wf.retry(id)
        except wf.WorkflowStateError:
            return "refused"
        except wf.WorkflowNotFoundError:
            return "not-found"
        return "accepted"

    return fn


def failed_instance(world, id: str) -> None:
    world.failures["charge"] = 1
    wf.start("ops-two-steps", {}, id=id)
    wf.drain()
    assert wf.get_status(id).status == "failed"


def test_two_concurrent_retries_of_one_failed_instance_one_is_accepted(workflow_clock, world):
    for round in range(ROUNDS):
        id = f"twice-{round}"
        failed_instance(world, id)
        outcomes = race([attempt_retry(id), attempt_retry(id)])
        assert sorted(outcomes) == ["accepted", "refused"], outcomes
        status = wf.get_status(id, journal=True)
        assert status.status == "pending"
        assert [e.name for e in status.journal if e.kind == "retry"] == ["$retry:1"]
        wf.delete(id, force=True)  # the next round's drain() must not run it


def test_two_concurrent_retries_of_a_compensation_failed_instance_one_is_accepted(
    workflow_clock, world
):
    for round in range(ROUNDS // 2):
        id = f"undo-{round}"
        world.failures["refund"] = 1000
        wf.start("ops-undo", {"fail": True}, id=id)
        wf.drain()
        assert wf.get_status(id).status == "compensation_failed"
        outcomes = race([attempt_retry(id), attempt_retry(id)])
        assert sorted(outcomes) == ["accepted", "refused"], outcomes
        assert wf.get_status(id).status == "compensating"
        wf.delete(id, force=True)


def test_purge_racing_a_retry_either_purges_first_or_leaves_the_retried_instance(
    workflow_clock, world
):
    seen = set()
    for round in range(ROUNDS):
        id = f"old-{round}"
        failed_instance(world, id)
        workflow_clock.advance("31d")

        # Even rounds race at once; the others give one side a head start, so that both
        # outcomes (and the checks of each below) are exercised, not only the likelier one.
        head_start = {1: "retry", 3: "purge", 5: "retry", 7: "purge"}.get(round % 8)

        def purge(head_start: str | None = head_start) -> int:
            if head_start == "retry":
                time.sleep(0.2)
            return wf.purge(older_than="30d").instances

        def retry(head_start: str | None = head_start, id: str = id) -> str:
            if head_start == "purge":
                time.sleep(0.2)
            return attempt_retry(id)()

        retried, purged = race([retry, purge])
        still_there = WorkflowInstance.objects.filter(pk=id).first()
        if retried == "accepted":
            assert still_there is not None, "retry accepted, and then the instance was purged"
            assert still_there.status == "pending"
            assert JournalEntry.objects.filter(instance_id=id, name="$retry:1").exists()
            assert JournalEntry.objects.filter(instance_id=id, name="reserve").exists()
            assert purged == 0
        else:
            assert retried in ("refused", "not-found")
            assert still_there is None
            assert not JournalEntry.objects.filter(instance_id=id).exists()
            assert purged == 1
        seen.add(retried)
        WorkflowInstance.objects.filter(pk=id).delete()
    assert "accepted" in seen and seen - {"accepted"}, f"outcomes seen: {sorted(seen)}"


def attempt_delete(id: str, after: threading.Event | None, done: threading.Event):
    def fn() -> str:
        try:
            if after is not None:
                assert after.wait(30)
            wf.delete(id, force=True)
        except wf.WorkflowStateError:
            return "refused"
        except wf.WorkflowNotFoundError:
            return "not-found"
        finally:
            done.set()
        return "deleted"

    return fn


def test_delete_racing_a_retry_leaves_retry_only_its_documented_errors(workflow_clock, world):
    # Odd rounds hold retry between its commit and its last read until the delete is done
    # (a receiver of its workflow-retried event, in retry's own thread); even ones race freely.
    retried, deleted = threading.Event(), threading.Event()

    def hold(sender, event, **kwargs):
        if event.type == "workflow-retried" and event.id.endswith(("1", "3", "5", "7")):
            retried.set()
            assert deleted.wait(30)

    workflow_event.connect(hold, weak=False)
    try:
        seen = set()
        for round in range(ROUNDS):
            id = f"gone-{round}"
            failed_instance(world, id)
            retried.clear()
            deleted.clear()
            held = round % 2 == 1
            delete = attempt_delete(id, retried if held else None, deleted)
            outcomes = race([attempt_retry(id), delete])
            assert outcomes[1] == "deleted", outcomes
            assert outcomes[0] in ("accepted", "refused", "not-found"), outcomes
            if held:
                assert outcomes[0] == "not-found"
            seen.add(outcomes[0])
            assert not WorkflowInstance.objects.filter(pk=id).exists()
        assert "not-found" in seen
    finally:
        workflow_event.disconnect(hold)
