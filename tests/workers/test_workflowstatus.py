"""manage.py workflowstatus: the workers and the queues' backlogs, as text or JSON; exit code 2
when a queue has due instances that no live worker claims, else 0."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

import django_workflows as wf
from tests.workers.helpers import register

pytestmark = pytest.mark.django_db


def status(*args: str) -> tuple[int, str]:
    """(exit code, stdout) of workflowstatus run as manage.py runs it."""
    out = io.StringIO()
    try:
        call_command("workflowstatus", *args, stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue()
    return 0, out.getvalue()


def test_nothing_due_exits_0(workflow_clock):
    code, out = status()
    assert code == 0
    assert "Workers: 0 live, 0 gone." in out and "nothing is due" in out


def test_a_backlog_with_no_live_worker_exits_2_naming_the_queue(workflow_clock):
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    register("cpu", queues=["default"])
    with pytest.raises(CommandError, match=r"1 queue\(s\) .*no live worker claims: gpu\.") as error:
        call_command("workflowstatus", stdout=io.StringIO())
    assert error.value.returncode == 2
    code, out = status()
    assert code == 2
    assert "ALERT  gpu  due 1" in out and "NO LIVE WORKER claims 1" in out
    assert "live  cpu  host box-1 pid 4242  queues default" in out


def test_a_live_worker_of_the_queue_exits_0(workflow_clock):
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    register("gpu-worker", queues=["gpu"])
    code, out = status()
    assert code == 0
    assert "ok  gpu  due 1" in out and "1 live worker(s)" in out


def test_json_has_the_documented_shape(workflow_clock):
    wf.start("ops-quick", {}, id="a-1")
    register("gone-worker", heartbeat=1.0)
    workflow_clock.advance("3s")
    code, out = status("--json")
    assert code == 2
    document = json.loads(out)
    assert set(document) == {"now", "workers", "queues", "alerts"}
    assert document["now"] == workflow_clock.now().isoformat()
    assert document["alerts"] == ["default"]
    [worker] = document["workers"]
    assert worker == {
        "id": "gone-worker",
        "host": "box-1",
        "pid": 4242,
        "queues": [],
        "workflows": [],
        "concurrency": 4,
        "version": "1.0",
        "heartbeat": 1.0,
        "started_at": "2026-01-01T00:00:00+00:00",
        "last_seen_at": "2026-01-01T00:00:00+00:00",
        "live": False,
        "running": 0,
        "executed": 0,
    }
    assert document["queues"] == [
        {
            "queue": "default",
            "due": 1,
            "oldest_due_at": "2026-01-01T00:00:00+00:00",
            "workers": [],
            "unserved": 1,
            "alert": True,
        }
    ]


def test_an_unknown_database_alias_is_an_error():
    with pytest.raises(CommandError, match="nowhere"):
        call_command("workflowstatus", "--database", "nowhere", stdout=io.StringIO())
