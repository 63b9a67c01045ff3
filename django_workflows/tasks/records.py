"""A Django task's TaskResult built from what the engine stores: the task workflow's input
(the task's path, arguments and options), its one step's journal entry and the progress each
attempt leaves in it (its worker, its error with the traceback), and the instance's status."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.module_loading import import_string

from ..models import Status
from .compat import InvalidTask, Task, TaskError, TaskResult, TaskResultStatus
from .names import TASK_PATH

# The step's journal statuses (engine/journal.py's), as this module reads them.
STEP_RUNNING = "running"

FAILED_STATUSES = (Status.FAILED, Status.CANCELLED, Status.COMPENSATION_FAILED)
RUNNING_STATUSES = (Status.RUNNING, Status.COMPENSATING)


def at(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def load_task(input: dict[str, Any]) -> Task:
    """The Task an instance was enqueued for: the object at its module path, with the
    priority, queue and run_after it was enqueued with. ImportError when the path no longer
    imports; InvalidTask when it names something other than a task."""
    found = import_string(input[TASK_PATH])
    if not isinstance(found, Task):
        raise InvalidTask(f"{input[TASK_PATH]!r} is not a task (decorate it with @task).")
    changes: dict[str, Any] = {}
    if found.priority != input["priority"]:
        changes["priority"] = input["priority"]
    if found.queue_name != input["queue_name"]:
        changes["queue_name"] = input["queue_name"]
    if input.get("run_after"):
        changes["run_after"] = at(input["run_after"])
    if found.backend != input["backend"]:
        changes["backend"] = input["backend"]
    return found.using(**changes) if changes else found


def task_result(
    task: Task,
    id: str,
    input: dict[str, Any],
    status: str,
    history: dict[str, Any],
    *,
    finished_at: datetime | None = None,
    return_value: Any = None,
) -> TaskResult:
    """A TaskResult of `status` from the enqueued input and an attempt history (worker_ids,
    started_at, last_attempted_at, errors)."""
    result: TaskResult = TaskResult(
        task=task,
        id=id,
        status=TaskResultStatus(status),
        enqueued_at=at(input.get("enqueued_at")),
        started_at=at(history.get("started_at")),
        finished_at=finished_at,
        last_attempted_at=at(history.get("last_attempted_at")),
        args=input["args"],
        kwargs=input["kwargs"],
        backend=input["backend"],
        errors=[
            TaskError(exception_class_path=e["exception_class_path"], traceback=e["traceback"])
            for e in history.get("errors", [])
        ],
        worker_ids=list(history.get("worker_ids", [])),
    )
    # Not a field: TaskResult.return_value reads it only once SUCCESSFUL, as Django's do.
    object.__setattr__(result, "_return_value", return_value)
    return result


def stored_result(
    id: str,
    status: str,
    input: dict[str, Any],
    output: Any,
    entry: dict[str, Any] | None,
    lease_owner: str | None,
    updated_at: datetime,
) -> TaskResult:
    """The TaskResult of a stored task instance: its status, input and output (decoded) and
    its step's entry (None before the first attempt started)."""
    task = load_task(input)
    if status == Status.COMPLETED and isinstance(output, dict):
        return task_result(
            task,
            id,
            input,
            TaskResultStatus.SUCCESSFUL,
            output,
            finished_at=at(output.get("finished_at")),
            return_value=output.get("return_value"),
        )
    history = dict((entry or {}).get("progress") or {})
    if entry is not None:
        history.setdefault("started_at", entry.get("started_at"))
        history["last_attempted_at"] = entry.get("started_at")
    if status in FAILED_STATUSES or status == Status.COMPLETED:
        finished = (entry or {}).get("finished_at") if entry is not None else None
        return task_result(
            task,
            id,
            input,
            TaskResultStatus.FAILED,
            history,
            finished_at=at(finished) if finished else updated_at,
        )
    if status in RUNNING_STATUSES and entry is not None and entry.get("status") == STEP_RUNNING:
        # The running attempt's worker is the lease's owner; its progress is the last one's.
        history["worker_ids"] = [*history.get("worker_ids", []), lease_owner or ""]
        return task_result(task, id, input, TaskResultStatus.RUNNING, history)
    if status in RUNNING_STATUSES and entry is None and lease_owner is not None:
        # Claimed: a first attempt's start is journaled with its end, so the claim (the
        # instance's last update) is when it started.
        claimed = updated_at.isoformat()
        history.update(started_at=claimed, last_attempted_at=claimed, worker_ids=[lease_owner])
        return task_result(task, id, input, TaskResultStatus.RUNNING, history)
    return task_result(task, id, input, TaskResultStatus.READY, history)
