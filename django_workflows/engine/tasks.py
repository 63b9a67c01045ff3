"""External tasks (ctx.task()): dispatch once as a journaled step, then wait for
django_workflows.complete_task() or fail_task(), with a timeout and the step's retries.

Attempt n journals three entries: the dispatch step `$task:<name>#<n>:dispatch`, the wait
`$task:<name>#<n>` (kind "task", for the engine-owned signal `$task` keyed by the instance id,
whose payload names the task, the attempt and the time the wait was reached), and, when the
attempt failed and the policy retries, the backoff `$task:<name>#<n>:retry`. The client records
the signal only while that wait is pending and its deadline has not passed, so a late or
repeated completion is refused, never lost in the store.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import errors
from ..durations import Duration, parse_duration
from ..models import JOURNAL_NAME_LENGTH
from ..retries import default_retry
from ..store.addressed import TASK_PREFIX, TASK_SIGNAL
from . import journal
from .approvals import addressed_to, completed_before
from .stepcontext import StepContext
from .steps import _check_arguments, step
from .waits import SignalCondition, TimerCondition, sleep, wait

if TYPE_CHECKING:
    from .runtime import Runtime

# The longest suffix an attempt's entry adds to the task's name: "#<attempt>:dispatch".
_SUFFIX = len("#4294967295:dispatch")


class TaskFailedError(errors.WorkflowError):
    """What fail_task() reported, as the cause of the task's StepFailedError."""


def task(
    x: Runtime,
    name: str,
    dispatch: Callable[[StepContext], Any],
    *,
    timeout: Duration | None,
    retry: Any,
) -> Any:
    """ctx.task(): the result complete_task() gave, after dispatch ran once per attempt.

    Raises WorkflowDefinitionError for a missing name or a dispatch that is not a function of
    one argument, ValueError for a name too long or a bad timeout or retry, and StepFailedError
    once the policy gives up: after dispatch kept raising, fail_task(), or the timeout
    (its cause a StepTimeoutError).
    """
    name = journal.check_name(name, "task")
    if not callable(dispatch):
        raise errors.WorkflowDefinitionError(
            f'Task "{name}" needs a dispatch function, got {dispatch!r}.'
        )
    _check_arguments(x, dispatch, 1, f'The dispatch function of task "{name}"', "lambda step: ...")
    longest = JOURNAL_NAME_LENGTH - len(TASK_PREFIX) - _SUFFIX
    if len(name) > longest:
        raise ValueError(
            f'The task name "{name[:40]}..." is {len(name)} characters long; the most it can be '
            f"is {longest} (journaled as {TASK_PREFIX}<name>#<attempt>:dispatch)."
        )
    limit = None if timeout is None else parse_duration(timeout, f'Task "{name}" timeout')
    policy = default_retry().merged(retry, f'Task "{name}" retry')
    attempt = 1
    while True:
        entry = f"{TASK_PREFIX}{name}#{attempt}"
        # The dispatch is a step: its own failures are retried by the same policy.
        step(
            x,
            f"{entry}:dispatch",
            dispatch,
            retry=retry,
            timeout=None,
            heartbeat_timeout=None,
            compensate=None,
            compensate_retry=None,
        )
        replayed = completed_before(x, entry)
        conditions: dict[str, Any] = {
            "done": SignalCondition(
                TASK_SIGNAL, x.instance.id, addressed_to(x, entry, task=name, attempt=attempt)
            )
        }
        if limit is not None:
            conditions["timeout"] = TimerCondition(limit, None)
        outcome = wait(x, entry, conditions, kind="task")
        report = outcome.value if outcome.key == "done" else None
        if isinstance(report, dict) and report.get("outcome") == "completed":
            if not replayed:
                x._emit("task-completed", task=name, attempt=attempt)
            return copy.deepcopy(report.get("result"))
        error: errors.WorkflowError
        if report is None:
            error = errors.StepTimeoutError(
                f'Task "{name}" was not completed within {limit.total_seconds():g}s.'  # type: ignore[union-attr]
            )
        else:
            error = TaskFailedError(str(report.get("message", "")))
        gives_up = policy.gives_up(attempt, error)
        delay = policy.wait_before(attempt, error)  # journaled by the backoff's sleep
        if not replayed:
            retry_at = None if gives_up else x.now() + delay
            x._emit(
                "step-failed",
                step=name,
                attempt=attempt,
                error={"name": type(error).__name__, "message": str(error)},
                retry_at=retry_at,
            )
        if gives_up:
            raise journal.step_failed(name, attempt, error)
        sleep(x, f"{entry}:retry", TimerCondition(delay, None))
        attempt += 1
