"""async def workflows: awaited ctx calls, async and sync steps, gather of coroutines."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.asyncwf.helpers import arun

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_async_workflow_runs_async_and_sync_steps_and_completes(define):
    seen = {}

    async def fetch(step):
        await asyncio.sleep(0)
        seen["fetch_loop"] = asyncio.get_running_loop() is not None
        return {"key": step.idempotency_key}

    def store(step):
        # A sync step in an async workflow runs on a thread with no running loop: the ORM works.
        seen["store_thread"] = threading.current_thread().name
        return WorkflowInstance.objects.count()

    @define("async-two-steps")
    async def two_steps(ctx, input):
        fetched = await ctx.step("fetch", fetch)
        count = await ctx.step("store", store)
        return {"fetched": fetched, "count": count, "input": input}

    wf.start("async-two-steps", {"n": 1}, id="a-1")
    assert wf.drain() == 1
    status = wf.get_status("a-1")
    assert status.status == "completed", status.error
    assert status.output == {"fetched": {"key": "a-1:fetch"}, "count": 1, "input": {"n": 1}}
    assert seen["fetch_loop"] is True
    assert seen["store_thread"] != "django_workflows async loop"


def test_awaited_sleeps_and_signal_waits_park_the_instance_and_replay_its_steps(
    define, workflow_clock
):
    calls = []

    async def reserve(step):
        calls.append("reserve")
        return "r-1"

    @define("async-park")
    async def park(ctx, input):
        reservation = await ctx.step("reserve", reserve)
        await ctx.sleep("pause", "1h")
        payload = await ctx.wait_for_signal("ship", "async-shipped", key=input)
        stamp = await ctx.now()
        return {"reservation": reservation, "payload": payload, "at": stamp.isoformat()}

    wf.start("async-park", "o-1", id="park-1")
    assert wf.drain() == 1
    assert wf.get_status("park-1").status == "suspended"
    workflow_clock.advance("1h")
    assert wf.drain() == 1
    status = wf.get_status("park-1")
    assert status.status == "suspended"
    assert [w.signal for w in status.waits] == ["async-shipped"]
    wf.signal("async-shipped", {"carrier": "dhl"}, key="o-1")
    assert wf.drain() == 1
    status = wf.get_status("park-1")
    assert status.status == "completed", status.error
    assert status.output["reservation"] == "r-1"
    assert status.output["payload"] == {"carrier": "dhl"}
    assert calls == ["reserve"]  # replayed from the journal at the later runs


def test_gather_runs_coroutines_as_branches_with_their_own_steps(define):
    async def slow(step):
        await asyncio.sleep(0.2)
        return step.idempotency_key

    async def branch(ctx, name):
        first = await ctx.step(f"{name}-a", slow)
        second = await ctx.step(f"{name}-b", lambda step: name.upper())
        return [first, second]

    @define("async-gather")
    async def gathered(ctx, input):
        return await ctx.gather(branch(ctx, "left"), branch(ctx, "right"))

    wf.start("async-gather", id="g-1")
    assert wf.drain() == 1
    status = wf.get_status("g-1", journal=True)
    assert status.status == "completed", status.error
    assert status.output == [["g-1:left-a", "LEFT"], ["g-1:right-a", "RIGHT"]]


@pytest.mark.parametrize("how", ["create_task", "asyncio.gather"])
def test_a_ctx_call_in_an_asyncio_task_of_the_workflows_own_raises_a_definition_error(define, how):
    ran = []

    def charge(step):
        ran.append(step.idempotency_key)
        return "charged"

    @define("async-own-task")
    async def own_task(ctx, input):
        if how == "create_task":
            return await asyncio.create_task(ctx.step("charge", charge))
        return await asyncio.gather(ctx.step("charge", charge), ctx.step("ship", charge))

    wf.start("async-own-task", id="t-1")
    wf.drain()
    status = wf.get_status("t-1", journal=True)
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert "in an asyncio task the workflow created" in status.error["message"]
    assert "ctx.gather()" in status.error["message"]
    assert not ran
    assert not [e for e in status.journal if e.kind == "step"]


def test_a_failing_async_step_is_retried_then_its_compensation_awaited(define, workflow_clock):
    undone = []

    async def charge(step):
        return "ch-1"

    async def refund(result, step):
        await asyncio.sleep(0)
        undone.append(result)

    async def ship(step):
        raise RuntimeError("no courier")

    @define("async-undo")
    async def undo(ctx, input):
        await ctx.step("charge", charge, compensate=refund)
        await ctx.step("ship", ship, retry={"attempts": 2, "delay": "1s"})

    wf.start("async-undo", id="u-1")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    status = wf.get_status("u-1")
    assert status.status == "failed", status
    assert "no courier" in status.error["message"]
    assert undone == ["ch-1"]


def test_a_child_awaited_from_an_async_parent(define):
    @define("async-child")
    async def child(ctx, input):
        return await ctx.step("double", lambda step: input * 2)

    @define("async-parent")
    async def parent(ctx, input):
        handle = await ctx.start_child("async-child", input)
        return {"child": handle.id, "output": await handle.result()}

    wf.start("async-parent", 21, id="p-1")
    while wf.drain():
        pass
    status = wf.get_status("p-1")
    assert status.status == "completed", status.error
    assert status.output["output"] == 42


def test_the_class_form_takes_an_async_run(define):
    class Greeting:
        async def run(self, ctx, input):
            return await ctx.step("greet", lambda step: f"hello {input}")

    define("async-class")(Greeting)
    wf.start("async-class", "ada", id="c-1")
    wf.drain()
    assert wf.get_status("c-1").output == "hello ada"


def test_an_async_step_in_a_sync_workflow_fails_the_instance_with_a_definition_error(define):
    async def fetch(step):
        return 1

    @define("sync-with-async-step")
    def mixed(ctx, input):
        return ctx.step("fetch", fetch)

    wf.start("sync-with-async-step", id="m-1")
    wf.drain()
    status = wf.get_status("m-1")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert 'step "fetch" is an async def function' in status.error["message"]


def test_a_sync_step_that_returns_a_coroutine_fails_with_a_definition_error(define):
    async def fetch():
        return 1

    @define("sync-returns-coroutine")
    def mixed(ctx, input):
        return ctx.step("fetch", lambda step: fetch())

    wf.start("sync-returns-coroutine", id="m-2")
    wf.drain()
    status = wf.get_status("m-2")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert "returned a coroutine that nothing awaits" in status.error["message"]


def test_gather_in_an_async_workflow_refuses_what_is_not_a_coroutine(define):
    @define("async-bad-gather")
    async def bad(ctx, input):
        return await ctx.gather(lambda: 1)

    wf.start("async-bad-gather", id="bg-1")
    wf.drain()
    status = wf.get_status("bg-1")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert "takes coroutines" in status.error["message"]


def test_the_orm_called_on_the_loop_by_an_async_step_fails_that_attempt(define):
    async def count(step):
        return WorkflowInstance.objects.count()  # on the loop: Django refuses it

    @define("async-orm-on-loop")
    async def orm(ctx, input):
        return await ctx.step("count", count, retry={"attempts": 1})

    wf.start("async-orm-on-loop", id="o-1")
    wf.drain()
    status = wf.get_status("o-1")
    assert status.status == "failed"
    assert "SynchronousOnlyOperation" in str(status.error), status.error


def test_an_async_step_reaches_the_orm_through_sync_to_async(define):
    async def count(step):
        return await sync_to_async(WorkflowInstance.objects.filter(id="o-2").count)()

    @define("async-orm-in-thread")
    async def orm(ctx, input):
        return await ctx.step("count", count)

    wf.start("async-orm-in-thread", id="o-2")
    wf.drain()
    arun(sync_to_async(connections.close_all)())  # that thread's connection: the test's to close
    status = wf.get_status("o-2")
    assert status.status == "completed", status.error
    assert status.output == 1


def test_an_async_workflow_that_swallows_the_engines_interrupt_still_parks(define):
    @define("async-swallow")
    async def swallow(ctx, input):
        try:
            await ctx.sleep("nap", "1h")
        except BaseException:
            pass
        return "too early"

    wf.start("async-swallow", id="s-1")
    wf.drain()
    assert wf.get_status("s-1").status == "suspended"


def test_an_async_step_past_its_timeout_fails_with_step_timeout_error(define):
    async def slow(step):
        await asyncio.sleep(3)
        return "late"

    @define("async-timeout")
    async def timed(ctx, input):
        return await ctx.step("slow", slow, timeout=0.2, retry={"attempts": 1})

    wf.start("async-timeout", id="t-1")
    wf.drain()
    status = wf.get_status("t-1")
    assert status.status == "failed"
    assert status.error["cause"]["name"] == "StepTimeoutError", status.error


def test_an_async_step_past_its_timeout_is_cancelled_at_its_next_await(define):
    """The timeout cancels the step's coroutine: the write after its await never happens, even
    after the instance failed and the sleep would have ended."""
    seen: list = []
    ended = threading.Event()

    async def slow(step):
        try:
            await asyncio.sleep(1)
            seen.append("written")  # the side effect that must not outlive the timeout
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            ended.set()

    @define("async-timeout-cancels")
    async def timed(ctx, input):
        return await ctx.step("slow", slow, timeout=0.2, retry={"attempts": 1})

    wf.start("async-timeout-cancels", id="t-2")
    wf.drain()
    assert wf.get_status("t-2").status == "failed"
    assert ended.wait(5)
    threading.Event().wait(1.2)  # past the end of the sleep the step was in
    assert seen == ["cancelled"]


def test_replay_checks_an_async_workflows_journal_against_its_code(define):
    from django_workflows.errors import WorkflowNonDeterminismError
    from django_workflows.testing import replay

    @define("async-replayed")
    async def replayed(ctx, input):
        await ctx.step("one", lambda step: 1)
        return await ctx.step("two", lambda step: 2)

    @define("async-reordered")
    async def reordered(ctx, input):
        await ctx.step("two", lambda step: 2)
        return await ctx.step("one", lambda step: 1)

    wf.start("async-replayed", id="r-1")
    wf.drain()
    assert wf.get_status("r-1").status == "completed"
    assert replay("r-1") is None
    with pytest.raises(WorkflowNonDeterminismError):
        replay("r-1", "async-reordered")
