"""Workflow code that swallows the engine's control flow (a bare `except:` or `except
BaseException:`): the engine does not depend on the code re-raising it. After a swallowed
interrupt no step runs, commit() raises again, a return parks or ends as the interrupt says, and
a cancel or run timeout still ends the instance (the reference's rules for workflow code)."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows import WorkflowInterrupt

pytestmark = pytest.mark.django_db


def swallowing(ctx, name, duration):
    try:
        ctx.sleep(name, duration)
    except BaseException:  # noqa: BLE001 - what the rule is about
        pass


def test_a_swallowed_sleep_then_a_return_still_parks_until_the_sleep_ends(define, workflow_clock):
    ran = []

    @define("swallow-return")
    def run(ctx, input):
        swallowing(ctx, "nap", "1h")
        return "returned"

    @define("swallow-step")
    def then_step(ctx, input):
        swallowing(ctx, "nap", "1h")
        ctx.step("s", lambda step: ran.append(step.attempt))
        return "stepped"

    wf.start("swallow-return", None, id="sr")
    wf.start("swallow-step", None, id="ss")
    wf.drain()
    assert wf.get_status("sr").status == wf.get_status("ss").status == "suspended"
    assert ran == []  # no step runs after a swallowed interrupt
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("sr").output == "returned"
    assert (wf.get_status("ss").output, ran) == ("stepped", [1])


def test_commit_after_a_swallowed_interrupt_raises_it_again(define, workflow_clock):
    seen = []

    @define("swallow-commit")
    def run(ctx, input):
        swallowing(ctx, "nap", "1h")
        try:
            ctx.commit("point")
        except WorkflowInterrupt as interrupt:
            seen.append(type(interrupt).__name__)
            raise

    wf.start("swallow-commit", None, id="sc")
    wf.drain()
    assert seen == ["Suspend"]
    assert [e.name for e in wf.get_status("sc", journal=True).journal] == ["nap"]


def test_an_error_raised_instead_of_a_swallowed_interrupt_still_parks(define, workflow_clock):
    @define("swallow-raise")
    def run(ctx, input):
        try:
            ctx.sleep("nap", "1h")
        except BaseException:  # noqa: BLE001
            raise RuntimeError("wrapped") from None

    wf.start("swallow-raise", None, id="sx")
    wf.drain()
    assert wf.get_status("sx").status == "suspended"


def test_a_swallowed_cancel_still_cancels(define, workflow_clock):
    @define("swallow-cancel")
    def run(ctx, input):
        swallowing(ctx, "nap", "1h")
        return "x"

    wf.start("swallow-cancel", None, id="sx")
    wf.drain()
    wf.cancel("sx", "changed plans")
    wf.drain()
    assert wf.get_status("sx").status == "cancelled"


def test_a_swallowed_run_timeout_still_fails_the_instance(define, workflow_clock):
    @define("swallow-timeout", timeout="1h")
    def run(ctx, input):
        swallowing(ctx, "nap", "2h")
        return "x"

    wf.start("swallow-timeout", None, id="st")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    status = wf.get_status("st")
    assert (status.status, status.error["name"]) == ("failed", "WorkflowTimeoutError")
