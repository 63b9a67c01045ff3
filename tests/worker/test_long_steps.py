"""Long-running steps: checkpoints, heartbeat_timeout and timeout (the reference's "Long-running
steps"). Timeouts are wall-clock: Python cannot kill a thread, so the abandoned attempt runs on,
and its late result is discarded."""

from __future__ import annotations

import threading
import time

import pytest

import django_workflows as wf
from django_workflows import Retry

pytestmark = pytest.mark.django_db


def test_the_next_attempt_starts_from_the_last_checkpoint(define, workflow_clock):
    seen = []

    @define("render-pages")
    def render(ctx, input):
        def pages(step):
            checkpoint = step.progress or {"cursor": 0, "rendered": 0}
            seen.append((step.attempt, checkpoint))
            for cursor in range(checkpoint["cursor"], 5):
                if cursor == 3 and step.attempt == 1:
                    raise ConnectionError("the renderer went away")
                step.heartbeat({"cursor": cursor + 1, "rendered": checkpoint["rendered"] + 1})
                checkpoint = step.progress
            return checkpoint

        return ctx.step("render", pages, retry=Retry(attempts=2, delay="1s"))

    wf.start("render-pages", None, id="pages")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    status = wf.get_status("pages")
    assert status.status == "completed", status.error
    assert seen == [(1, {"cursor": 0, "rendered": 0}), (2, {"cursor": 3, "rendered": 3})]
    assert status.output == {"cursor": 5, "rendered": 5}


def test_a_step_past_its_timeout_fails_its_attempt_and_is_retried(define, workflow_clock):
    late = threading.Event()
    cancelled = []

    @define("slow-call")
    def slow(ctx, input):
        def call(step):
            if step.attempt == 1:
                step.cancelled.wait(5)
                cancelled.append(step.cancelled.is_set())
                late.set()
                return "late result"
            return "second attempt"

        return ctx.step("call", call, timeout="200ms", retry=Retry(attempts=2, delay="1s"))

    wf.start("slow-call", None, id="slow")
    wf.drain()
    status = wf.get_status("slow", journal=True)
    assert status.status == "suspended"
    entry = status.journal[0]
    assert entry.error["name"] == "StepTimeoutError" and entry.attempt == 1
    assert late.wait(5) and cancelled == [True]  # its cancelled event was set
    workflow_clock.advance("1s")
    wf.drain()
    assert wf.get_status("slow").output == "second attempt"  # the late result was discarded


def test_a_step_that_stops_heartbeating_fails_with_step_timeout_error(define, workflow_clock):
    @define("hung-socket")
    def hung(ctx, input):
        def call(step):
            step.heartbeat()
            time.sleep(0.05)
            step.heartbeat()
            step.cancelled.wait(5)  # a hung socket: no more heartbeats
            return "never"

        return ctx.step("call", call, heartbeat_timeout="300ms", retry=1)

    wf.start("hung-socket", None, id="hung")
    wf.drain()
    status = wf.get_status("hung")
    assert status.status == "failed"
    assert status.error["name"] == "StepFailedError"
    assert status.error["cause"]["name"] == "StepTimeoutError"
    assert "heartbeat_timeout" in status.error["cause"]["message"]


@pytest.mark.django_db(transaction=True)  # the cancel commits: its on_commit reaches the step
def test_a_cancel_sets_the_running_steps_cancelled_event(define, workflow_clock):
    observed = []

    @define("cancellable")
    def cancellable(ctx, input):
        def call(step):
            wf.cancel("cancellable-1", "stop it")
            observed.append(step.cancelled.is_set())
            return "done"

        ctx.step("call", call)
        ctx.step("after", lambda step: "not reached")

    wf.start("cancellable", None, id="cancellable-1")
    wf.drain()
    status = wf.get_status("cancellable-1", journal=True)
    assert status.status == "cancelled"
    assert [e.name for e in status.journal] == ["call"]
    assert observed == [True]
