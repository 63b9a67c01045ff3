"""Writing streams: ctx.stream() exactly once (journaled), step.stream() as it happens and at
least once, one stream per instance and name (SPEC.md section 14)."""

from __future__ import annotations

import asyncio
import threading

import pytest

import django_workflows as wf
from django_workflows import Retry, clock
from django_workflows.models import WorkflowStream, WorkflowStreamItem
from django_workflows.store import streams
from tests.helpers import wait_until, worker_thread


def items(id, name):
    return [
        (i.offset, i.value, i.attempt)
        for i in streams.read("default", id, name, after=0, limit=100_000)
    ]


@pytest.mark.django_db
def test_a_workflows_writes_are_not_written_again_by_its_replays(define):
    @define("streams-ctx")
    def run(ctx, input):
        out = ctx.stream("progress")
        out.write({"stage": "reserved"})
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        out.write("shipped")
        out.close()
        return "ok"

    wf.start("streams-ctx", id="c1")
    wf.drain()
    assert items("c1", "progress") == [(1, {"stage": "reserved"}, None)]
    wf.signal("go", key="c1")
    wf.drain()
    assert wf.get_status("c1").status == "completed"
    assert items("c1", "progress") == [(1, {"stage": "reserved"}, None), (2, "shipped", None)]
    assert streams.is_closed("default", "c1", "progress")


@pytest.mark.django_db
def test_a_step_and_its_workflow_write_one_stream(define):
    @define("streams-both")
    def run(ctx, input):
        ctx.stream("log").write("begin")

        def work(step):
            out = step.stream("log")
            for n in range(3):
                out.write(n)
            return 3

        ctx.step("work", work)
        ctx.stream("log").close()
        return 1

    wf.start("streams-both", id="b1")
    wf.drain()
    assert wf.get_status("b1").status == "completed", wf.get_status("b1").error
    assert items("b1", "log") == [(1, "begin", None), (2, 0, 1), (3, 1, 1), (4, 2, 1)]
    assert WorkflowStream.objects.get(instance_id="b1").closed


@pytest.mark.django_db
def test_a_retried_step_writes_again_each_item_with_its_attempt(define):
    @define("streams-retry")
    def run(ctx, input):
        def work(step):
            step.stream("tokens").write(f"try {step.attempt}")
            if step.attempt == 1:
                raise RuntimeError("flaky")
            return "done"

        return ctx.step("work", work, retry=Retry(attempts=2, delay="0s"))

    wf.start("streams-retry", id="r1")
    wf.drain()
    assert wf.get_status("r1").status == "completed", wf.get_status("r1").error
    assert items("r1", "tokens") == [(1, "try 1", 1), (2, "try 2", 2)]


@pytest.mark.django_db
def test_a_burst_of_a_steps_items_is_stored_in_order(define):
    @define("streams-burst")
    def run(ctx, input):
        def work(step):
            out = step.stream("tokens")
            for n in range(1200):
                out.write(n)
            return 1

        return ctx.step("work", work)

    wf.start("streams-burst", id="burst")
    wf.drain()
    assert [value for _, value, _ in items("burst", "tokens")] == list(range(1200))


@pytest.mark.django_db
def test_a_step_writing_past_max_items_fails_its_attempt(define, settings):
    settings.DJANGO_WORKFLOWS = {"STREAMS": {"MAX_ITEMS": 5}}

    @define("streams-full-step")
    def run(ctx, input):
        def work(step):
            out = step.stream("tokens")
            for n in range(10):
                out.write(n)
            return 1

        return ctx.step("work", work, retry=Retry(attempts=1))

    wf.start("streams-full-step", id="f1")
    wf.drain()
    status = wf.get_status("f1")
    assert status.status == "failed"
    assert "WorkflowStreamFullError" in str(status.error)
    assert WorkflowStreamItem.objects.filter(instance_id="f1").count() <= 5


@pytest.mark.django_db
def test_a_workflow_may_catch_a_full_stream(define, settings):
    settings.DJANGO_WORKFLOWS = {"STREAMS": {"MAX_ITEMS": 1}}

    @define("streams-full-ctx")
    def run(ctx, input):
        out = ctx.stream("s")
        out.write(1)
        try:
            out.write(2)
        except wf.WorkflowStreamFullError as error:
            return error.stream
        return None

    wf.start("streams-full-ctx", id="f2")
    wf.drain()
    assert wf.get_status("f2").output == "s"
    assert items("f2", "s") == [(1, 1, None)]


@pytest.mark.django_db
def test_stream_calls_refuse_bad_names_and_values(define):
    @define("streams-bad")
    def run(ctx, input):
        problems = []
        for call in (
            lambda: ctx.stream(""),
            lambda: ctx.stream("x" * 256),
            lambda: ctx.stream("s").write(object()),
        ):
            try:
                call()
            except (TypeError, ValueError) as error:
                problems.append(type(error).__name__)
        return problems

    wf.start("streams-bad", id="bad")
    wf.drain()
    assert wf.get_status("bad").output == ["TypeError", "ValueError", "TypeError"]


@pytest.mark.django_db
def test_an_async_workflow_writes_its_stream(define):
    @define("streams-async")
    async def run(ctx, input):
        out = ctx.stream("s")
        await out.write("a")
        await asyncio.sleep(0)
        await out.close()
        return 1

    wf.start("streams-async", id="as1")
    wf.drain()
    assert wf.get_status("as1").status == "completed", wf.get_status("as1").error
    assert items("as1", "s") == [(1, "a", None)]
    assert streams.is_closed("default", "as1", "s")


@pytest.mark.django_db(transaction=True)
def test_a_steps_items_are_visible_while_it_runs(define):
    release = threading.Event()

    @define("streams-live")
    def run(ctx, input):
        def work(step):
            step.stream("tokens").write("first")
            release.wait(10)
            return 1

        return ctx.step("work", work)

    wf.start("streams-live", id="live")
    with worker_thread(concurrency=1):
        try:
            assert wait_until(lambda: items("live", "tokens") == [(1, "first", 1)], 10)
            assert wf.get_status("live").status == "running"
        finally:
            release.set()
        assert wait_until(lambda: wf.get_status("live").status == "completed", 10)
    assert clock.now()


@pytest.mark.django_db
def test_a_fork_writes_its_own_stream_from_the_start(define):
    @define("streams-fork")
    def run(ctx, input):
        out = ctx.stream("s")
        out.write("before")
        ctx.step("pay", lambda step: 1)
        out.write("after")
        out.close()
        return 1

    wf.start("streams-fork", id="orig")
    wf.drain()
    forked = wf.fork("orig", from_step="pay")
    wf.drain()
    assert wf.get_status(forked.id).status == "completed", wf.get_status(forked.id).error
    assert items(forked.id, "s") == [(1, "before", None), (2, "after", None)]
    assert items("orig", "s") == [(1, "before", None), (2, "after", None)]


@pytest.mark.django_db
def test_an_async_step_writes_its_stream(define):
    @define("streams-async-step")
    async def run(ctx, input):
        async def talk(step):
            out = step.stream("tokens")
            for token in ("a", "b"):
                out.write(token)
                await asyncio.sleep(0.01)
            return 1

        return await ctx.step("talk", talk)

    wf.start("streams-async-step", id="as2")
    wf.drain()
    assert wf.get_status("as2").status == "completed", wf.get_status("as2").error
    assert items("as2", "tokens") == [(1, "a", 1), (2, "b", 1)]


@pytest.mark.django_db
def test_after_continue_as_new_the_next_run_writes_on_after_the_last_offset(define):
    @define("streams-continued")
    def run(ctx, input):
        n = (input or {}).get("n", 0)
        ctx.stream("progress").write(f"run {n}")
        if n < 2:
            ctx.continue_as_new({"n": n + 1})
        ctx.stream("progress").close()
        return n

    wf.start("streams-continued", id="continued-1")
    for _ in range(5):
        wf.drain()
    assert wf.result("continued-1") == 2
    assert items("continued-1", "progress") == [
        (1, "run 0", None),
        (2, "run 1", None),
        (3, "run 2", None),
    ]
    assert streams.is_closed("default", "continued-1", "progress")
