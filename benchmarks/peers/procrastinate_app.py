"""Procrastinate: one task (a task is one step), returning a small dict.

    python -m procrastinate --app=benchmarks.peers.procrastinate_app.app worker --concurrency 10

The database is DPEER_PROCRASTINATE_CONNINFO. The task is an `async def`: Procrastinate runs its
concurrency on the event loop and documents it for asynchronous tasks. Everything but the
concurrency is Procrastinate's default (LISTEN/NOTIFY on, polling every 5 s as a fallback).
"""

from __future__ import annotations

import os
from typing import Any

from procrastinate import App, PsycopgConnector

app = App(connector=PsycopgConnector(conninfo=os.environ["DPEER_PROCRASTINATE_CONNINFO"]))


@app.task(name="one_step")
async def one_step() -> dict[str, Any]:
    return {"i": 0, "ok": True}
