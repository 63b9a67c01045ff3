"""The benchmark's workflow: K trivial steps, each returning a small dict."""

from __future__ import annotations

import os
from typing import Any

from django_workflows import Concurrency, workflow


@workflow("bench")
def bench(ctx: Any, input: dict[str, Any]) -> dict[str, Any]:
    last: dict[str, Any] = {}
    for i in range(int(input["steps"])):
        last = ctx.step(f"step-{i}", lambda step, i=i: {"i": i, "ok": True})
    return {"steps": input["steps"], "last": last}


if os.environ.get("BENCH_KEYED"):
    # Only when asked for (run.py --keys): a worker whose workflows include one with a limit
    # claims every workflow under limits, so registered always it would slow every other drain.
    @workflow("bench-keyed", concurrency=Concurrency(limit=1, key=lambda input: input["customer"]))
    def bench_keyed(ctx: Any, input: dict[str, Any]) -> dict[str, Any]:
        """`bench` under `Concurrency(limit=1, key=customer)` (benchmarks/run.py --keys)."""
        return bench(ctx, input)


@workflow("bench-async")
async def bench_async(ctx: Any, input: dict[str, Any]) -> dict[str, Any]:
    """`bench` as an async def workflow with async steps (benchmarks/run.py --async)."""
    last: dict[str, Any] = {}
    for i in range(int(input["steps"])):

        async def work(step: Any, i: int = i) -> dict[str, Any]:
            return {"i": i, "ok": True}

        last = await ctx.step(f"step-{i}", work)
    return {"steps": input["steps"], "last": last}


@workflow("bench-value")
def bench_value(ctx: Any, input: dict[str, Any]) -> None:
    """Waits for the signal `publish` (key: its id), then publishes `ready`: what
    benchmarks/value_wakeup.py times a get_value() in another process against."""
    ctx.wait_for_signal("go", "publish", key=ctx.instance_id)
    ctx.set_value("ready", True)


@workflow("bench-signal")
def bench_signal(ctx: Any, input: dict[str, Any]) -> None:
    """Waits for the signal `go` (key: its id), then runs one step: what benchmarks/wakeup.py
    times a signal() in another process against."""
    ctx.wait_for_signal("go", "go", key=ctx.instance_id)
    ctx.step("after", lambda step: {"ok": True})


@workflow("bench-update")
def bench_update(ctx: Any, input: dict[str, Any]) -> None:
    """Waits for the update `go`, then runs one step (benchmarks/wakeup.py)."""
    ctx.wait_for_update("go")
    ctx.step("after", lambda step: {"ok": True})
