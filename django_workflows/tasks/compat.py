"""The one import of Django's Tasks framework: `django.tasks` on Django 6, the `django-tasks`
backport (`django_tasks`, the extra `tasks`) on Django 4.2 and 5.2. Every other module of
this package imports the framework's names from here."""

from __future__ import annotations

from typing import Any

try:
    from django.tasks import (  # type: ignore[import-not-found,unused-ignore]
        DEFAULT_TASK_QUEUE_NAME,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task,
        task_backends,
    )
    from django.tasks import exceptions as _exceptions  # type: ignore[import-not-found,unused-ignore]
    from django.tasks.backends.base import (  # type: ignore[import-not-found,unused-ignore]
        BaseTaskBackend,
    )
    from django.tasks.base import (  # type: ignore[import-not-found,unused-ignore]
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskError,
    )
    from django.tasks.signals import (  # type: ignore[import-not-found,unused-ignore]
        task_enqueued,
        task_finished,
        task_started,
    )
    from django.utils.json import normalize_json  # type: ignore[attr-defined,unused-ignore]

    FRAMEWORK = "django.tasks"
except ImportError:
    from django_tasks import (  # type: ignore[no-redef,assignment,unused-ignore]
        DEFAULT_TASK_QUEUE_NAME,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task,
        task_backends,
    )
    from django_tasks import exceptions as _exceptions  # type: ignore[no-redef,unused-ignore]
    from django_tasks.backends.base import (  # type: ignore[no-redef,assignment,unused-ignore]
        BaseTaskBackend,
    )
    from django_tasks.base import (  # type: ignore[no-redef,assignment,unused-ignore]
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskError,
    )
    from django_tasks.signals import (  # type: ignore[no-redef,assignment,unused-ignore]
        task_enqueued,
        task_finished,
        task_started,
    )
    from django_tasks.utils import normalize_json  # type: ignore[no-redef,unused-ignore]

    FRAMEWORK = "django_tasks"

# Django 6 and the backport's latest release call it InvalidTask; 0.12 InvalidTaskError.
InvalidTask: type[Exception] = getattr(_exceptions, "InvalidTask", None) or getattr(  # noqa: B009
    _exceptions, "InvalidTaskError"
)
TaskResultDoesNotExist: type[Exception] = _exceptions.TaskResultDoesNotExist


def module_path(value: Any) -> str:
    """The dotted path Django names a function or a class by (`module.qualname`)."""
    return f"{value.__module__}.{value.__qualname__}"


__all__ = [
    "DEFAULT_TASK_QUEUE_NAME",
    "FRAMEWORK",
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "module_path",
    "normalize_json",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
