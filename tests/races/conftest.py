"""Helpers for the race tests: real threads, each on its own database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection


def vendor() -> str:
    return connection.vendor


def threads_for(server: int, sqlite: int) -> int:
    """How many threads a race uses: fewer on SQLite, which serializes writers anyway."""
    return sqlite if connection.vendor == "sqlite" else server


def race(fns: list[Callable[[], Any]], *, timeout: float = 120) -> list[Any]:
    """Run every callable in a thread of its own, all released at once by a barrier.

    Returns their results in order; re-raises the first error any of them raised. Each thread
    closes its own database connection at its end.
    """
    barrier = threading.Barrier(len(fns))
    results: list[Any] = [None] * len(fns)
    errors: list[BaseException | None] = [None] * len(fns)

    def target(index: int, fn: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = fn()
        except BaseException as error:  # reported to the test's thread below
            errors[index] = error
        finally:
            connection.close()

    threads = [
        threading.Thread(target=target, args=(i, fn), name=f"race-{i}", daemon=True)
        for i, fn in enumerate(fns)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    stuck = [thread.name for thread in threads if thread.is_alive()]
    assert not stuck, f"threads still running after {timeout}s: {stuck}"
    for error in errors:
        if error is not None:
            raise error
    return results


@pytest.fixture
def db_vendor(transactional_db: Any) -> str:
    return connection.vendor
