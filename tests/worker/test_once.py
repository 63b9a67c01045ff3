"""runworkflows --once: what the run loop does (its thread pool, batched claims and lease
renewals) until nothing is due that can start and every execution ended, then exit."""

from __future__ import annotations

import threading
from io import StringIO

import pytest
from django.core.management import call_command

import django_workflows as wf
from django_workflows import Schedule
from django_workflows.models import WorkflowInstance

pytestmark = pytest.mark.django_db(transaction=True)


def once(*args: str) -> str:
    out = StringIO()
    call_command("runworkflows", "--once", "--poll-interval", "50ms", *args, stdout=out)
    return out.getvalue()


def test_once_runs_instances_concurrently_up_to_its_concurrency(define):
    # Each step waits for the other three at a barrier: run one at a time, the first would
    # time out there and fail.
    meet = threading.Barrier(4, timeout=20)
    spans: list[tuple[str, str]] = []
    guard = threading.Lock()

    @define("meet")
    def meeting(ctx, input):
        def step(step):
            with guard:
                spans.append((ctx.instance_id, "start"))
            meet.wait()
            with guard:
                spans.append((ctx.instance_id, "end"))
            return "met"

        return ctx.step("meet", step)

    for n in range(4):
        wf.start("meet", None, id=f"meet-{n}")
    assert once("--concurrency", "4") == "Ran 4 execution(s).\n"
    assert {wf.get_status(f"meet-{n}").output for n in range(4)} == {"met"}
    # Every step started before any ended: four ran at once.
    assert [kind for _, kind in spans] == ["start"] * 4 + ["end"] * 4


def test_once_runs_what_becomes_due_while_it_runs_then_exits(define):
    @define("kid")
    def kid(ctx, input):
        return ctx.step("grow", lambda step: input * 2)

    @define("parent")
    def parent(ctx, input):
        return ctx.execute_child("kid", input, id=f"{ctx.instance_id}-kid")

    for n in range(3):
        wf.start("parent", n, id=f"parent-{n}")
    once("--concurrency", "4")
    assert [wf.get_status(f"parent-{n}").output for n in range(3)] == [0, 2, 4]
    assert not WorkflowInstance.objects.exclude(status="completed").exists()


def test_once_starts_the_schedule_occurrences_the_clock_passed(define, workflow_clock):
    @define("hourly", schedules=[Schedule("hourly-report", cron="0 * * * *")])
    def hourly(ctx, input):
        return ctx.step("report", lambda step: "reported")

    once()  # saves the declared schedule; its first occurrence is at 01:00
    workflow_clock.advance("1h")
    assert once("--concurrency", "2") == "Ran 1 execution(s).\n"
    [row] = WorkflowInstance.objects.filter(schedule_id="hourly-report")
    assert (row.status, wf.get_status(row.pk).output) == ("completed", "reported")
