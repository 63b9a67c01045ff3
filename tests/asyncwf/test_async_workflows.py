"""async def workflows: awaited ctx calls, async and sync steps, gather of coroutines."""

from __future__ import annotations

import asyncio
import threading

import pytest

import django_workflows as wf
from django_workflows.models import WorkflowInstance

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
