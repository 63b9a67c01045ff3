"""Fixtures of the store's tests: the statements a test's connection sends, a connection that
listens as a worker does, and a two-step workflow to run through the write routines
(tests/store/runs.py runs it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection


@pytest.fixture
def sent() -> Iterator[list[str]]:
    """The statements this thread's connection sends."""
    statements: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield statements


@pytest.fixture
def listening() -> Iterator[Any]:
    """A connection of its own that listens as a worker does (PostgreSQL): see notified()."""
    from django_workflows.store.backends.base import NOTIFY_CHANNEL

    raw = connection.get_new_connection(connection.get_connection_params())
    raw.autocommit = True
    raw.execute(f"LISTEN {NOTIFY_CHANNEL}")
    try:
        yield raw
    finally:
        raw.close()


@pytest.fixture
def two_steps(define: Any) -> Any:
    """`two-steps`: n + 1, then twice that (42 for 20)."""

    @define("two-steps")
    def two_steps(ctx: Any, n: int) -> int:
        a = ctx.step("a", lambda step: n + 1)
        return ctx.step("b", lambda step: a * 2)

    return two_steps
