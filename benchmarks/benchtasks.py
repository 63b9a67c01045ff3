"""The no-op tasks benchmarks/tasks.py enqueues: one per backend, at module level, where both
backends' workers import them."""

from __future__ import annotations

from django_workflows.tasks.compat import task


@task
def noop() -> None:
    return None


@task(backend="db")
def db_noop() -> None:
    return None
