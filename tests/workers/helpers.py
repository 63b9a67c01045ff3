"""Shared by the worker-registry tests: waiting with a deadline, and registry rows written
through the store as a worker writes them."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from django.db import connection

from django_workflows import clock
from django_workflows.store import workers as registry


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "it") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"Timed out waiting for {what}.")


def register(
    id: str,
    *,
    queues: list[str] | None = None,
    workflows: list[str] | None = None,
    heartbeat: float = 10.0,
    seen: datetime | None = None,
) -> None:
    """A worker's row as its worker registers it, last seen at `seen` (now by default)."""
    now = seen or clock.now()
    registry.register(
        connection.alias,
        registry.Registration(
            id=id,
            host="box-1",
            pid=4242,
            queues=queues or [],
            workflows=workflows or [],
            concurrency=4,
            version="1.0",
            heartbeat=heartbeat,
            started_at=now,
        ),
        now=now,
    )
