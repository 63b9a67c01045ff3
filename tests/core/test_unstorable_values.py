"""Values a workflow makes that the database would refuse: they fail the right thing, once.

A step result, a workflow output or a custom status that no write can store (a lone surrogate,
a NUL on PostgreSQL, nesting deeper than MAX_DEPTH) used to reach the write and fail it: the
engine then ran the already completed step again, up to five times, and blamed it.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import Retry
from django_workflows.jsonvalues import MAX_DEPTH, MAX_MESSAGE

pytestmark = pytest.mark.django_db

SURROGATE = "\ud800"


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


UNSTORABLE = {
    "surrogate": {"name": f"a{SURROGATE}b"},
    "surrogate-key": {SURROGATE: 1},
    "too-deep": nested(MAX_DEPTH + 1),
}


@pytest.mark.parametrize("kind", list(UNSTORABLE))
def test_a_step_result_that_cannot_be_stored_fails_the_step_once_naming_it(
    define, workflow_clock, kind
):
    ran = []

    @define("unstorable-result")
    def unstorable_result(ctx, input):
        return ctx.step("make", lambda step: ran.append(1) or UNSTORABLE[kind])

    wf.start("unstorable-result", None, id="x")
    wf.drain()
    status = wf.get_status("x", journal=True)
    assert status.status == "failed"
    assert ran == [1]
    assert status.error["step"] == "make" and status.error["attempts"] == 1
    assert 'The result of step "make"' in status.error["message"]
    assert status.error["cause"]["name"] == "UnstorableValueError"
    assert [(e.name, e.status) for e in status.journal] == [("make", "failed")]


def test_a_nul_in_a_step_result_fails_the_step_on_postgresql_only(define, workflow_clock):
    ran = []

    @define("nul-result")
    def nul_result(ctx, input):
        return ctx.step("make", lambda step: ran.append(1) or {"note": "a\x00b"})

    wf.start("nul-result", None, id="x")
    wf.drain()
    status = wf.get_status("x")
    assert ran == [1]
    if connection.vendor == "postgresql":
        assert status.status == "failed"
        assert 'The result of step "make" contains a NUL' in status.error["message"]
    else:  # SQLite and MariaDB store it
        assert status.status == "completed" and status.output == {"note": "a\x00b"}


@pytest.mark.parametrize("kind", list(UNSTORABLE))
def test_a_workflow_output_that_cannot_be_stored_fails_the_workflow_with_compensations(
    define, workflow_clock, kind
):
    ran, undone = [], []

    @define("unstorable-output")
    def unstorable_output(ctx, input):
        ctx.step(
            "book",
            lambda step: ran.append(1) or "booked",
            compensate=lambda result, step: undone.append(result),
        )
        return UNSTORABLE[kind]

    wf.start("unstorable-output", None, id="x")
    wf.drain()
    status = wf.get_status("x")
    assert status.status == "failed"
    assert status.error["name"] == "UnstorableValueError"
    assert "The workflow's output" in status.error["message"]
    assert ran == [1] and undone == ["booked"]  # the completed step did not run again


def test_a_custom_status_that_cannot_be_stored_fails_the_workflow_naming_it(define, workflow_clock):
    @define("unstorable-status")
    def unstorable_status(ctx, input):
        ctx.set_status({"stage": SURROGATE})

    wf.start("unstorable-status", None, id="x")
    wf.drain()
    status = wf.get_status("x")
    assert status.status == "failed"
    assert "The custom status contains a lone surrogate" in status.error["message"]
    assert status.custom_status is None


@pytest.mark.parametrize(
    ("message", "stored"), [(f"bad {SURROGATE}", "bad \\ud800"), ("bad \x00", "bad \\x00")]
)
def test_a_step_error_message_that_cannot_be_stored_is_recorded_escaped(
    define, workflow_clock, message, stored
):
    """The error is the engine's to record: it is made storable, not a reason to fail again.
    The step is retried as its policy says, no more."""
    ran = []

    def fail(step):
        ran.append(1)
        raise RuntimeError(message)

    @define("unstorable-error")
    def unstorable_error(ctx, input):
        ctx.step("fail", fail, retry=Retry(attempts=2, delay="1s"))

    wf.start("unstorable-error", None, id="x")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    status = wf.get_status("x", journal=True)
    assert status.status == "failed" and ran == [1, 1]
    assert status.error["attempts"] == 2
    assert status.error["cause"] == {"name": "RuntimeError", "message": stored}
    assert stored in status.error["message"]
    assert status.journal[0].error["message"] == stored


def test_a_workflow_error_message_that_cannot_be_stored_is_recorded_escaped(define, workflow_clock):
    @define("unstorable-workflow-error")
    def unstorable_workflow_error(ctx, input):
        raise ValueError(f"bad {SURROGATE}\x00")

    wf.start("unstorable-workflow-error", None, id="x")
    wf.drain()
    status = wf.get_status("x")
    assert status.status == "failed"
    assert status.error == {"name": "ValueError", "message": "bad \\ud800\\x00"}


@pytest.mark.parametrize("name", [f"s{SURROGATE}", "s\x00"])
def test_a_step_name_that_cannot_be_stored_fails_the_instance_before_the_step_runs(
    define, workflow_clock, name
):
    ran = []

    @define("unstorable-name")
    def unstorable_name(ctx, input):
        ctx.step(name, lambda step: ran.append(1))

    wf.start("unstorable-name", None, id="x")
    wf.drain()
    status = wf.get_status("x")
    assert status.status == "failed" and ran == []
    assert status.error["name"] == "UnstorableValueError"
    assert "The step name" in status.error["message"]


def test_a_step_error_message_longer_than_the_limit_is_stored_cut(define, workflow_clock):
    """A 20 MB message would not fit MariaDB's packet: the engine keeps its first 64 KiB."""
    message = "m" * 20_000_000

    def fail(step):
        raise RuntimeError(message)

    @define("long-error")
    def long_error(ctx, input):
        ctx.step("fail", fail, retry=False)

    wf.start("long-error", None, id="x")
    wf.drain()
    status = wf.get_status("x", journal=True)
    assert status.status == "failed"
    cut = f"{'m' * MAX_MESSAGE}... ({20_000_000 - MAX_MESSAGE} more characters)"
    assert status.error["cause"]["message"] == cut
    assert status.journal[0].error["message"] == cut


def test_a_failure_cause_that_cannot_be_stored_is_recorded_as_its_repr(define, workflow_clock):
    @define("unstorable-cause")
    def unstorable_cause(ctx, input):
        raise wf.WorkflowFailedError("boom", cause={"at": SURROGATE, "when": object})

    wf.start("unstorable-cause", None, id="x")
    wf.drain()
    status = wf.get_status("x")
    assert status.status == "failed" and status.error["message"] == "boom"
    assert status.error["cause"] == {
        "name": "WorkflowError",
        "message": "{'at': '\\ud800', 'when': <class 'object'>}",
    }


def test_a_value_nested_as_deep_as_allowed_goes_through_steps_children_and_signals(
    define, workflow_clock
):
    """The engine keeps values inside documents of its own (a journal entry, a child's end, a
    wait's result): MAX_DEPTH leaves them room under MariaDB's 32 levels."""
    deep = nested(MAX_DEPTH)

    @define("deep-child")
    def deep_child(ctx, input):
        return ctx.step("echo", lambda step: input)

    @define("deep-parent")
    def deep_parent(ctx, input):
        ctx.set_status(deep)
        made = ctx.step("make", lambda step: deep)
        from_child = ctx.start_child("deep-child", made, id="deep-kid").result()
        signalled = ctx.wait_for_signal("await", "deep", key="k")
        if from_child != deep or signalled != deep:
            raise AssertionError("the value came back changed")
        return ctx.step("last", lambda step: deep)

    wf.start("deep-parent", deep, id="deep")
    wf.drain()
    wf.signal("deep", deep, key="k")
    wf.drain()
    status = wf.get_status("deep")
    assert status.status == "completed", status.error
    assert status.output == deep and status.custom_status == deep
