"""Limit how many run at once: rules found missing or wrong in a review against the reference."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.checks import run_checks

import django_workflows as wf
from django_workflows import Concurrency, RateLimit, clock
from django_workflows.models import WorkflowInstance

from .test_limits import claim, release

pytestmark = pytest.mark.django_db


def test_an_instance_holds_its_slot_while_it_compensates(define, workflow_clock):
    @define("undoing", concurrency=Concurrency(limit=1))
    def undoing(ctx, input):
        return None

    wf.start("undoing", {}, id="u1")
    wf.start("undoing", {}, id="u2")
    assert claim("undoing") == ["u1"]
    WorkflowInstance.objects.filter(pk="u1").update(status="compensating")
    assert claim("undoing") == []  # its compensations run: it keeps the slot
    workflow_clock.advance("31s")  # its process crashed mid-compensation: the slot frees
    assert claim("undoing") == ["u1"]
    assert WorkflowInstance.objects.get(pk="u1").status == "compensating"


def test_a_slot_is_counted_across_every_version_of_the_workflow(define, workflow_clock):
    @define("slots-versioned", version=1, concurrency=Concurrency(limit=1))
    def v1(ctx, input):
        return None

    @define("slots-versioned", version=2, concurrency=Concurrency(limit=1))
    def v2(ctx, input):
        return None

    wf.start("slots-versioned", {}, id="v1", version=1)
    assert claim("slots-versioned") == ["v1"]
    wf.start("slots-versioned", {}, id="v2", version=2)
    assert claim("slots-versioned") == []


def test_a_window_that_ended_opens_a_new_one_at_the_first_claim_after_it(define, workflow_clock):
    @define("windowed", rate_limit=RateLimit(max=1, duration="10s"))
    def windowed(ctx, input):
        return None

    for i in range(3):
        wf.start("windowed", {}, id=f"w{i}")
    assert claim("windowed") == ["w0"]
    workflow_clock.advance("10s")  # windowEnd <= now: it ended
    assert claim("windowed") == ["w1"]
    workflow_clock.advance("9s")
    release("w0")
    assert claim("windowed") == []  # the new window opened 9s ago, not when the last ended
    workflow_clock.advance("1s")
    assert claim("windowed") == ["w2"]


def test_the_system_check_reports_a_key_the_limits_in_force_have_no_per_key_limit_for(define):
    # Limits come from the highest registered version: a key an older version computes (or
    # start() sets for it) limits nothing there.
    @define("key-dropped", version=1, concurrency=Concurrency(limit=1, key=lambda i: i["user"]))
    def v1(ctx, input):
        return None

    @define("key-dropped", version=2, concurrency=Concurrency(limit=5))
    def v2(ctx, input):
        return None

    @define("rate-key-dropped", version=1, rate_limit=RateLimit(1, "1s", key=lambda i: i["t"]))
    def r1(ctx, input):
        return None

    @define("rate-key-dropped", version=2)
    def r2(ctx, input):
        return None

    @define("key-kept", version=1)
    def k1(ctx, input):
        return None

    @define("key-kept", version=2, concurrency=Concurrency(limit=1, key=lambda i: i["user"]))
    def k2(ctx, input):
        return None

    flagged = [m for m in run_checks() if m.id == "django_workflows.E008"]
    assert sorted(m.obj for m in flagged) == ["key-dropped", "rate-key-dropped"]
    assert "concurrency" in next(m.msg for m in flagged if m.obj == "key-dropped")
    assert "rate" in next(m.msg for m in flagged if m.obj == "rate-key-dropped")


def test_drain_stops_when_only_limited_instances_are_left(define, workflow_clock):
    @define("one-per-user", concurrency=Concurrency(limit=1, key=lambda i: i["user"]))
    def one(ctx, input):
        ctx.sleep("nap", "1h")

    wf.start("one-per-user", {"user": "a"}, id="a1")
    wf.start("one-per-user", {"user": "a"}, id="a2")
    assert wf.drain() == 2  # each parks: its slot frees, and the other runs
    WorkflowInstance.objects.filter(pk="a1").update(  # another worker runs it
        status="running",
        wake_at=clock.now(),
        lease_until=clock.now() + timedelta(minutes=5),
        lease_token="x",
    )
    WorkflowInstance.objects.filter(pk="a2").update(wake_at=clock.now())
    assert wf.drain() == 0  # a1's lease holds user a's slot: nothing can start
