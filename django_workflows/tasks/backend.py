"""WorkflowTaskBackend: a backend for Django's TASKS setting that runs each enqueued task as
an instance of the built-in task workflow (tasks/workflow.py), claimed and run by
`runworkflows`, and reads its TaskResult back from the instance (tasks/records.py)."""

from __future__ import annotations

import secrets
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from .. import clock
from ..conf import database_alias
from ..definitions import Retry, check_queue
from ..engine.starts import StartOptions, start_instance
from ..jsonvalues import check_text
from ..store import instances as store
from .compat import (
    TASK_MAX_PRIORITY,
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from .names import STEP, TASK_PATH, TASK_WORKFLOW
from .records import stored_result, task_result
from .workflow import register

OPTIONS = ("RETRY",)


def engine_priority(priority: int) -> int:
    """Django's priority (-100 to 100, higher first) as the engine's (lower first): 100 is 1,
    0 (Django's default) is 101, -100 is 201. Every task has one, so tasks keep Django's order
    among themselves; workflow instances started without a priority go before them all."""
    return TASK_MAX_PRIORITY + 1 - priority


def parse_retry(options: Any) -> tuple[Retry, list[str]]:
    """OPTIONS["RETRY"] as the step's Retry (one attempt, Django's default, without it), and
    what is wrong with OPTIONS (the bad part is left out)."""
    problems: list[str] = []
    if not isinstance(options, dict):
        return Retry(attempts=1), [f"OPTIONS must be a dict, not {type(options).__name__}."]
    unknown = sorted(str(name) for name in options if name not in OPTIONS)
    if unknown:
        problems.append(f"OPTIONS has unknown keys: {', '.join(unknown)} (it takes RETRY).")
    raw = options.get("RETRY")
    if raw is None:
        return Retry(attempts=1), problems
    if isinstance(raw, Retry):
        return raw, problems
    if not isinstance(raw, dict):
        problems.append(f"OPTIONS['RETRY'] must be a dict of Retry's fields, not {raw!r}.")
        return Retry(attempts=1), problems
    try:
        return Retry(**raw), problems
    except (TypeError, ValueError) as error:
        problems.append(f"OPTIONS['RETRY'] is not a retry policy: {error}")
        return Retry(attempts=1), problems


class WorkflowTaskBackend(BaseTaskBackend):
    """Django Tasks on django-durable-workflows: each task a one-step instance of the workflow
    "django_workflows.task", its id the TaskResult's id, in the queue `queue_name` names."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self._retry, self.problems = parse_retry(self.options)
        self.raw_queues = params.get("QUEUES")

    @property
    def retry(self) -> Retry:
        """The retry policy of OPTIONS["RETRY"]; ImproperlyConfigured when it is not one."""
        if self.problems:
            raise ImproperlyConfigured(
                f"TASKS[{self.alias!r}]: " + " ".join(self.problems) + " (see `manage.py check`)."
            )
        return self._retry

    def validate_task(self, task: Task) -> None:
        """Django's checks (InvalidTask: a function not at module level, a priority outside
        -100..100, a naive run_after, a queue not in QUEUES...), and a queue name the engine
        can store."""
        super().validate_task(task)
        try:
            check_queue(task.queue_name, "queue_name")
        except (TypeError, ValueError) as error:
            raise InvalidTask(str(error)) from None

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        """Start the task's instance, inside the caller's transaction when there is one (it
        commits or rolls back with it), and return its READY TaskResult. Everything is checked
        before any SQL: InvalidTask for a task Django refuses or one a worker could not import
        at its module path, TypeError for arguments that are not JSON."""
        self.validate_task(task)
        path = _importable(task)
        self.retry  # noqa: B018 - ImproperlyConfigured before anything is written
        definition = register()
        id = secrets.token_hex(16)  # 32 characters; a tenth of get_random_string(32)'s CPU
        now = clock.now()
        input = {
            TASK_PATH: path,
            "backend": self.alias,
            "priority": task.priority,
            "queue_name": task.queue_name,
            "run_after": None if task.run_after is None else task.run_after.isoformat(),
            "enqueued_at": now.isoformat(),
            "args": args,
            "kwargs": kwargs,
        }
        # TaskResult normalizes the arguments as Django's backends do: TypeError when not JSON.
        result = task_result(task, id, input, TaskResultStatus.READY, {})
        input["args"], input["kwargs"] = result.args, result.kwargs
        using = database_alias()
        wake_at = task.run_after
        if wake_at is not None and timezone.is_naive(wake_at):  # USE_TZ = False
            wake_at = timezone.make_aware(wake_at)
        options = StartOptions(
            id=id, priority=engine_priority(task.priority), queue=task.queue_name, wake_at=wake_at
        )
        start_instance(definition, input, options, using=using)
        sender = type(self)
        # Sent once the task exists for the workers: at commit, never for a rolled-back one.
        transaction.on_commit(
            lambda: task_enqueued.send(sender=sender, task_result=result), using=using
        )
        return result

    def get_result(self, result_id: str) -> TaskResult:
        """The task's TaskResult as stored now; TaskResultDoesNotExist for an id that is no
        task of this backend's workflow (also one that no instance can have: a NUL in it)."""
        found = None
        if _storable(result_id):
            found = store.get_instance_and_entry(database_alias(), result_id, STEP)
        if found is None or found[0].workflow != TASK_WORKFLOW:
            raise TaskResultDoesNotExist(result_id)
        row, entry = found
        return stored_result(
            result_id, row.status, row.input, row.output, entry, row.lease_owner, row.updated_at
        )

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """Errors for OPTIONS that are not this backend's (RETRY's shape) and QUEUES that are
        not a list of queue names the engine can store."""
        found: list[checks.CheckMessage] = [
            checks.Error(
                f"TASKS[{self.alias!r}]: {problem}",
                hint="OPTIONS takes RETRY, a dict of Retry's fields "
                "(attempts, delay, factor, max_delay, jitter).",
                id="django_workflows.tasks.E001",
            )
            for problem in self.problems
        ]
        queues = self.raw_queues
        if queues is not None and (
            not isinstance(queues, list | tuple) or not all(isinstance(q, str) for q in queues)
        ):
            found.append(
                checks.Error(
                    f"TASKS[{self.alias!r}]['QUEUES'] must be a list of queue names, "
                    f"not {queues!r}.",
                    id="django_workflows.tasks.E002",
                )
            )
            return found
        for queue in queues or []:
            try:
                check_queue(queue, "queue")
            except ValueError as error:
                found.append(
                    checks.Error(
                        f"TASKS[{self.alias!r}]['QUEUES']: {error}",
                        id="django_workflows.tasks.E002",
                    )
                )
        return found


def _storable(id: Any) -> bool:
    """Whether `id` is a string an instance's id can be (no NUL, no lone surrogate)."""
    if not isinstance(id, str):
        return False
    try:
        check_text("The id", id)
    except ValueError:
        return False
    return True


def _importable(task: Task) -> str:
    """The task's module path, which a worker imports it by; InvalidTask unless it gives
    this task back."""
    path = task.module_path
    try:
        found = import_string(path)
    except ImportError as error:
        raise InvalidTask(
            f"Task {path!r} cannot be imported at its module path, where a worker looks for "
            f"it ({error}): define it with @task at the top level of an importable module."
        ) from None
    if not isinstance(found, Task) or found.func is not task.func:
        raise InvalidTask(
            f"{path!r} is not this task where a worker looks for it: decorate the function "
            f"with @task at the top level of its module, under its own name."
        )
    return path
