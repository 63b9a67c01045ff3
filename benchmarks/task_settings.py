"""Django settings for benchmarks/tasks.py: the benchmark settings with one Tasks backend,
BENCH_TASKS, as the `default` alias, configured as its README says. The peers are
benchmark-only dependencies (benchmarks/tasks-peers.txt), never the package's."""

from __future__ import annotations

import os

import django

from benchmarks.settings import *  # noqa: F403
from benchmarks.settings import INSTALLED_APPS

BACKEND = os.environ.get("BENCH_TASKS", "workflows")

# Each backend's app, `TASKS["default"]` and any other setting its README asks for. The
# options are the defaults but for the worker's threads where the README puts them in
# settings (dj-queue); the other workers take theirs on the command line (benchmarks/tasks.py).
_BACKENDS: dict[str, tuple[list[str], dict[str, object]]] = {
    "workflows": ([], {"BACKEND": "django_workflows.tasks.WorkflowTaskBackend"}),
    "tasks-db": (["django_tasks_db"], {"BACKEND": "django_tasks_db.DatabaseBackend"}),
    "dj-queue": (
        ["dj_queue"],
        {
            "BACKEND": "dj_queue.backend.DjQueueBackend",
            "QUEUES": [],
            "OPTIONS": {"workers": [{"threads": int(os.environ.get("BENCH_THREADS", "10"))}]},
        },
    ),
    "ox": (["django_ox"], {"BACKEND": "django_ox.backend.OxBackend"}),
}
_apps, _backend = _BACKENDS[BACKEND]

INSTALLED_APPS = [
    *INSTALLED_APPS,
    *(["django_tasks"] if django.VERSION < (6, 0) else []),
    *_apps,
]
TASKS = {"default": _backend}
if BACKEND == "dj-queue":
    DATABASE_ROUTERS = ["dj_queue.routers.DjQueueRouter"]
# Persistent connections, as a production project keeps them: with Django's default (0), a
# worker that closes its connection between tasks, as Django does between requests, connects
# again for each task (django-tasks-db and dj-queue on PostgreSQL: 42-87 tasks/s against
# 135-420/s). BENCH_CONN_MAX_AGE=0 measures that default.
DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("BENCH_CONN_MAX_AGE", "60"))  # noqa: F405
