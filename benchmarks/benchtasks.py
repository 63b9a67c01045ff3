"""The tasks benchmarks/tasks.py enqueues, on whichever backend is `default`
(benchmarks/task_settings.py): a no-op, and one that inserts three rows."""

from __future__ import annotations

from benchmarks.benchapp.models import BenchRow
from django_workflows.tasks.compat import task


@task
def noop() -> None:
    return None


@task
def insert3() -> None:
    for value in range(3):
        BenchRow.objects.create(value=value)
