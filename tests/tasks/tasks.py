"""Task functions the tests enqueue: at module level, as Django requires, and what they did
recorded in `calls` (the worker runs them in this process)."""

from __future__ import annotations

import asyncio
from typing import Any

from django_workflows.tasks.compat import Task, task

calls: list[Any] = []


@task
def add(a: int, b: int) -> int:
    calls.append(("add", a, b))
    return a + b


@task
def noop() -> None:
    return None


@task(queue_name="mail")
def send_mail(to: str) -> str:
    calls.append(("mail", to))
    return f"sent to {to}"


@task
def record(name: str) -> str:
    calls.append(name)
    return name


@task(backend="retrying")
def explode(message: str) -> None:
    calls.append(("explode", message))
    raise RuntimeError(message)


@task(backend="retrying", takes_context=True)
def flaky(context: Any, succeed_on: int) -> dict[str, Any]:
    calls.append(("flaky", context.attempt))
    if context.attempt < succeed_on:
        raise ValueError(f"attempt {context.attempt} fails")
    return {"attempt": context.attempt, "id": context.task_result.id}


@task(takes_context=True)
def with_context(context: Any) -> int:
    return context.attempt


@task(takes_context=True)
def look_at_itself(context: Any) -> list[Any]:
    """Its own TaskResult, read from the database while it runs."""
    own = context.task_result
    stored = own.task.get_result(own.id)
    return [stored.status, stored.attempts, stored.worker_ids == own.worker_ids]


@task
async def sleepy(value: str) -> str:
    await asyncio.sleep(0)
    return value.upper()


def define_hidden() -> Task:
    """A module-level function that a Task wraps but that the module does not name: a worker
    could not import it at its path."""

    def hidden() -> None:  # pragma: no cover - never runs
        return None

    hidden.__qualname__ = "hidden"  # looks module-level, is not importable
    return task(hidden)


@task
def interrupted() -> None:
    """Ctrl-C while it runs: the worker stops, the task is not finished."""
    calls.append("interrupted")
    raise KeyboardInterrupt("stop")
