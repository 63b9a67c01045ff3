"""STEP_MIDDLEWARE: handlers in Django's middleware shape around every attempt of every step
and compensation, outermost first; they may transform the result or raise, and cannot stop
the engine's control flow by swallowing it."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows import Retry, middleware
from django_workflows.middleware import StepInvocation
from django_workflows.models import WorkflowInstance
from tests.middleware import handlers

pytestmark = pytest.mark.django_db


def test_middlewares_wrap_each_attempt_outermost_first(define, step_middleware):
    step_middleware("outer", "inner")

    @define("mw-order")
    def run(ctx, input):
        return ctx.step("charge", lambda step: "charged")

    wf.start("mw-order", None, id="mw-order-1")
    wf.drain()
    assert wf.get_status("mw-order-1").output == "charged"
    order = [(where, what if where.endswith("after") else None) for where, what in handlers.seen]
    assert order == [
        ("outer", None),
        ("inner", None),
        ("inner-after", "charged"),
        ("outer-after", "charged"),
    ]
    invocation = handlers.seen[0][1]
    definition = wf.get_status("mw-order-1")
    assert invocation == StepInvocation(
        instance_id="mw-order-1",
        workflow="mw-order",
        version=definition.version,
        step="charge",
        attempt=1,
        kind="step",
        _call=invocation._call,
    )
    assert handlers.seen[1][1] is invocation  # one invocation goes down the whole chain


def test_a_middleware_transforms_the_result_the_step_journals(
    define, step_middleware, workflow_clock
):
    step_middleware("doubling")

    @define("mw-double")
    def run(ctx, input):
        first = ctx.step("count", lambda step: 21)
        ctx.sleep("nap", "1h")
        return {"first": first, "text": ctx.step("name", lambda step: "cat")}

    wf.start("mw-double", None, id="mw-double-1")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()  # replays "count" from the journal: the doubled result
    assert wf.get_status("mw-double-1").output == {"first": 42, "text": "cat"}


def test_a_middleware_that_raises_fails_the_attempt_and_the_step_is_retried(
    define, step_middleware, workflow_clock, events
):
    step_middleware("refusing_first_attempts")
    ran = []

    @define("mw-refuse")
    def run(ctx, input):
        return ctx.step(
            "ship", lambda step: ran.append(step.attempt) or "shipped", retry=Retry(attempts=3)
        )

    wf.start("mw-refuse", None, id="mw-refuse-1")
    for _ in range(3):
        wf.drain()
        workflow_clock.advance("10s")
    status = wf.get_status("mw-refuse-1")
    assert (status.status, status.output, ran) == ("completed", "shipped", [3])
    failures = [e.data for e in events if e.type == "step-failed"]
    assert [(f["attempt"], f["error"]["message"]) for f in failures] == [
        (1, "refused attempt 1"),
        (2, "refused attempt 2"),
    ]


def test_a_middleware_that_swallows_an_interrupt_does_not_stop_it(define, step_middleware, events):
    step_middleware("swallowing")
    after = []

    def step_whose_lease_is_lost(step):
        # Another worker claimed the instance: the heartbeat's write finds the lease gone.
        WorkflowInstance.objects.filter(pk="mw-swallow-1").update(lease_token="someone-else")
        step.heartbeat({"done": 1})
        return "finished"

    @define("mw-swallow")
    def run(ctx, input):
        ctx.step("long", step_whose_lease_is_lost)
        after.append("ran on")
        return "done"

    wf.start("mw-swallow", None, id="mw-swallow-1")
    wf.drain()
    assert after == []  # the lease loss stopped the workflow's code at the step
    assert not [e for e in events if e.type == "step-completed"]
    assert WorkflowInstance.objects.get(pk="mw-swallow-1").status == "running"


def test_compensations_run_through_the_chain_as_kind_compensation(define, step_middleware):
    step_middleware("outer")

    @define("mw-undo")
    def run(ctx, input):
        ctx.step("reserve", lambda step: "r1", compensate=lambda result, step: "released")
        ctx.fail("out of stock")

    wf.start("mw-undo", None, id="mw-undo-1")
    wf.drain()
    assert wf.get_status("mw-undo-1").status == "failed"
    calls = [(i.step, i.kind, i.attempt) for where, i in handlers.seen if where == "outer"]
    assert calls == [("reserve", "step", 1), ("reserve", "compensation", 1)]


def test_the_chain_is_built_again_when_the_setting_changes(define, step_middleware, settings):
    step_middleware("doubling")
    first = middleware.chain()
    assert middleware.chain() is first  # cached
    step_middleware("outer")
    assert middleware.chain() is not first

    @define("mw-reload")
    def run(ctx, input):
        return ctx.step("count", lambda step: 21)

    wf.start("mw-reload", None, id="mw-reload-1")
    wf.drain()
    assert wf.get_status("mw-reload-1").output == 21  # "doubling" is gone
    assert [where for where, _ in handlers.seen] == ["outer", "outer-after"]
    settings.DJANGO_WORKFLOWS = {
        key: value for key, value in settings.DJANGO_WORKFLOWS.items() if key != "STEP_MIDDLEWARE"
    }
    assert middleware.chain().handler is None


def test_without_middleware_the_attempt_is_called_as_it_is(settings):
    settings.DJANGO_WORKFLOWS = {
        key: value
        for key, value in (getattr(settings, "DJANGO_WORKFLOWS", None) or {}).items()
        if key != "STEP_MIDDLEWARE"
    }
    chain = middleware.chain()
    assert (chain.handler, chain.starts, chain.executions) == (None, (), ())


@pytest.mark.parametrize("timeout", [None, "30s"])
def test_a_context_variable_a_middleware_sets_is_the_steps(define, step_middleware, timeout):
    # With a timeout the step runs on a thread of its own: the chain runs there too.
    step_middleware("tenant_context")

    @define("mw-tenant")
    def run(ctx, input):
        return ctx.step("who", lambda step: handlers.current_tenant.get(), timeout=timeout)

    wf.start("mw-tenant", None, id="acme:order-1")
    wf.drain()
    assert wf.get_status("acme:order-1").output == "acme"
    assert handlers.current_tenant.get() is None  # reset after the attempt
