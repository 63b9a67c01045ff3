"""The worker's async executions share one event loop, in a thread beside its pool."""

from __future__ import annotations

import asyncio
import threading

import pytest

import django_workflows as wf
from django_workflows.engine.coroutines import event_loop
from tests.helpers import wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


def test_async_steps_of_two_executions_run_together_on_one_loop(define):
    # Each step waits for the other's event: they finish only if both run on the loop at once.
    loops = set()
    threads = set()
    arrived: dict[str, asyncio.Event] = {}

    async def meet(step):
        me = step.idempotency_key.split(":")[0]
        other = "meet-2" if me == "meet-1" else "meet-1"
        loops.add(id(asyncio.get_running_loop()))
        threads.add(threading.current_thread().name)
        arrived.setdefault(me, asyncio.Event()).set()
        await asyncio.wait_for(arrived.setdefault(other, asyncio.Event()).wait(), 20)
        return me

    @define("async-meet")
    async def meeting(ctx, input):
        return await ctx.step("meet", meet)

    wf.start("async-meet", id="meet-1")
    wf.start("async-meet", id="meet-2")
    with worker_thread(concurrency=2, poll_interval=0.05):
        assert wait_until(
            lambda: {wf.get_status(i).status for i in ("meet-1", "meet-2")} == {"completed"}, 30
        )
    assert [wf.get_status(i).output for i in ("meet-1", "meet-2")] == ["meet-1", "meet-2"]
    assert loops == {id(event_loop())}
    assert threads == {"django_workflows async loop"}
