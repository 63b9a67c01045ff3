from __future__ import annotations

import pytest

import django_workflows as wf
from tests.testapp.world import world

pytestmark = pytest.mark.django_db


def test_retry_runs_a_failed_instance_again_with_the_step_attempts_back(workflow_clock):
    world.reset()
    world.failures["charge"] = 2
    wf.start("flaky", {"retry": {"attempts": 1}}, id="f1")
    wf.drain()
    failed = wf.get_status("f1")
    assert failed.status == "failed" and failed.error["name"] == "StepFailedError"
    reopened = wf.retry("f1")
    assert reopened.status == "pending"
    wf.drain()
    assert wf.get_status("f1").status == "failed"  # the second failure
    wf.retry("f1")
    wf.drain()
    done = wf.get_status("f1", journal=True)
    assert done.status == "completed", done.error
    assert [e.name for e in done.journal if e.kind == "retry"] == ["$retry:1", "$retry:2"]
    assert wf.result("f1") == {"charge_id": "ch_1", "amount": 1}
    with pytest.raises(wf.WorkflowStateError):
        wf.retry("f1")
    assert wf.delete("f1") is True
    assert wf.get_status("f1") is None


def test_purge_deletes_old_finished_instances(workflow_clock):
    world.reset()
    wf.start("flaky", {}, id="old")
    wf.drain()
    workflow_clock.advance("31d")
    wf.start("flaky", {}, id="new")
    wf.drain()
    purged = wf.purge(older_than="30d")
    assert purged.instances == 1
    assert wf.get_status("old") is None and wf.get_status("new") is not None


def test_result_raises_for_a_failed_instance(workflow_clock):
    world.reset()
    wf.start("flaky", {"user_id": "u_declined"}, id="declined")
    wf.drain()
    with pytest.raises(wf.WorkflowFailedError) as raised:
        wf.result("declined", timeout=1)
    assert raised.value.status == "failed"
    wf.start("wait-once", {"key": "k"}, id="waiting")
    wf.drain()
    with pytest.raises(wf.WorkflowResultTimeoutError):
        wf.result("waiting", timeout=0.1)
