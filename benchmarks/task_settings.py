"""Django settings for benchmarks/tasks.py: the benchmark settings, with both Tasks backends
on the one database: "default" is WorkflowTaskBackend, "db" the django-tasks-db backend
(`pip install django-tasks-db`, a benchmark-only dependency, not one of the package's)."""

from __future__ import annotations

import django

from benchmarks.settings import *  # noqa: F403
from benchmarks.settings import INSTALLED_APPS

INSTALLED_APPS = [
    *INSTALLED_APPS,
    *(["django_tasks"] if django.VERSION < (6, 0) else []),
    "django_tasks_db",
]
TASKS = {
    "default": {"BACKEND": "django_workflows.tasks.WorkflowTaskBackend"},
    "db": {"BACKEND": "django_tasks_db.DatabaseBackend"},
}
