"""Django Tasks on django-workflows: `TASKS = {"default": {"BACKEND":
"django_workflows.tasks.WorkflowTaskBackend"}}` runs each enqueued task as a one-step
workflow instance (Django 6's django.tasks, or the django-tasks backport, the extra `tasks`)."""

from __future__ import annotations

from .backend import WorkflowTaskBackend

__all__ = ["WorkflowTaskBackend"]
