"""The built-in task workflow, "django_workflows.task": one journaled step that runs an
enqueued Django task's function with its backend's retries, records each attempt (its worker,
its time, its error with the traceback) in the step's progress, and sends the framework's
task_started and task_finished signals.

Registered at ready() only where TASKS names the backend: other deployments' workers claim
nothing more than before."""

from __future__ import annotations

from typing import Any

from .. import clock
from ..definitions import Workflow
from ..engine.registry import registry, workflow
from ..engine.retries import default_retry
from ..engine.tracebacks import format_traceback
from .compat import (
    TaskContext,
    TaskResultStatus,
    module_path,
    normalize_json,
    task_backends,
    task_finished,
    task_started,
)
from .names import STEP, TASK_WORKFLOW
from .records import load_task, task_result


def register() -> Workflow:
    """The task workflow's definition, registered at the first call."""
    return registry.latest(TASK_WORKFLOW) or workflow(TASK_WORKFLOW)(run)


def run(ctx: Any, input: dict[str, Any]) -> Any:
    """The task workflow: its one step, retried as the task's backend says."""
    retry = task_backends[input["backend"]].retry  # type: ignore[attr-defined]
    worker = ctx.worker_id or ""
    return ctx.step(STEP, lambda step: attempt(step, ctx.instance_id, input, worker), retry=retry)


def _now() -> str:
    return clock.now().isoformat()


def attempt(step: Any, id: str, input: dict[str, Any], worker: str) -> dict[str, Any]:
    """One attempt of the task's function. Its history (worker ids, times, errors) rides in
    the step's progress, which the engine journals with a failed attempt and hands to the
    next; a success returns it with the return value, as the workflow's output."""
    backend = task_backends[input["backend"]]
    sender = type(backend)
    now = _now()
    previous = dict(step.progress or {})
    history: dict[str, Any] = {
        "worker_ids": [*previous.get("worker_ids", []), worker],
        "started_at": previous.get("started_at") or now,
        "last_attempted_at": now,
        "errors": list(previous.get("errors", [])),
    }
    step.progress = history
    task = None
    try:
        task = load_task(input)
        running = task_result(task, id, input, "RUNNING", history)
        task_started.send(sender=sender, task_result=running)
        args, kwargs = input["args"], input["kwargs"]
        if task.takes_context:
            value = task.call(TaskContext(task_result=running), *args, **kwargs)
        else:
            value = task.call(*args, **kwargs)
        value = normalize_json(value)
    except KeyboardInterrupt:
        # Ctrl-C stops the worker, as Django's backends let it: no failure of the task, no
        # error of its own and no task_finished (the engine decides what becomes of the step).
        raise
    except BaseException as error:
        # The engine's traceback, as the step's journaled error keeps it (its tail past 16 KiB).
        history["errors"].append(
            {"exception_class_path": module_path(type(error)), "traceback": format_traceback(error)}
        )
        step.progress = history
        policy = default_retry().merged(backend.retry)  # type: ignore[attr-defined]
        if task is not None and policy.gives_up(step.attempt, error):
            failed = task_result(
                task,
                id,
                input,
                TaskResultStatus.FAILED,
                history,
                finished_at=clock.now(),
            )
            task_finished.send(sender=sender, task_result=failed)
        raise
    finished = clock.now()
    done = task_result(
        task,
        id,
        input,
        TaskResultStatus.SUCCESSFUL,
        history,
        finished_at=finished,
        return_value=value,
    )
    task_finished.send(sender=sender, task_result=done)
    return {**history, "finished_at": finished.isoformat(), "return_value": value}
