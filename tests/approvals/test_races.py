"""Concurrent resumes and completions: one is recorded, the others are refused."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

import django_workflows as wf
from django_workflows.models import Signal

pytestmark = pytest.mark.django_db(transaction=True)


def race(call, n: int = 8) -> list[str]:
    """Run `call` on n threads at once; "ok" or the exception's class name for each."""
    barrier = threading.Barrier(n)
    outcomes: list[str] = []

    def run() -> None:
        try:
            barrier.wait(timeout=30)
            call()
            outcomes.append("ok")
        except Exception as error:
            outcomes.append(type(error).__name__)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return sorted(outcomes)


def test_concurrent_resumes_record_one(workflow_clock, define):
    @define("gate")
    def gate(ctx, input):
        ctx.breakpoint("approve")
        return "through"

    wf.start("gate", id="raced")
    wf.drain()
    outcomes = race(lambda: wf.resume("raced"))
    assert outcomes == ["WorkflowStateError"] * 7 + ["ok"]
    assert Signal.objects.count() == 1
    wf.drain()
    assert wf.get_status("raced").output == "through"


def test_concurrent_completions_record_one(workflow_clock, define):
    @define("job")
    def job(ctx, input):
        return ctx.task("work", lambda step: None)

    wf.start("job", id="raced-task")
    wf.drain()
    outcomes = race(lambda: wf.complete_task("raced-task", "work", 1))
    assert outcomes == ["WorkflowStateError"] * 7 + ["ok"]
    assert Signal.objects.count() == 1
    wf.drain()
    assert wf.get_status("raced-task").output == 1
