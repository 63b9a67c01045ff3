"""Django Tasks on django-durable-workflows: `TASKS = {"default": {"BACKEND":
"django_workflows.tasks.WorkflowTaskBackend"}}` runs each enqueued task as a one-step
workflow instance (Django 6's django.tasks, or the django-tasks backport, the extra `tasks`).

The backend is imported when first asked for (as Django's TASKS handler does): this package's
framework-free modules (`names`) import on deployments without the framework."""

from __future__ import annotations

from typing import Any

__all__ = ["WorkflowTaskBackend"]


def __getattr__(name: str) -> Any:
    if name == "WorkflowTaskBackend":
        from .backend import WorkflowTaskBackend

        return WorkflowTaskBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
