"""External tasks (ctx.task()): dispatch as a journaled step, then wait for
django_workflows.complete_task() or fail_task(), with a timeout and the step's retries.

Attempt n journals three entries: the dispatch step `$task:<name>#<n>:dispatch` (one attempt,
whose step.attempt is n and whose idempotency key is the task's, "<instance id>:<name>"), the
wait `$task:<name>#<n>` (kind "task", for the engine-owned signal `$task` keyed by the instance
id, whose payload names the task, the attempt and the time the wait was reached), and, when the
attempt failed (the dispatch raised, fail_task(), the timeout) and the policy retries, the
backoff `$task:<name>#<n>:retry`. The client records the signal only while that wait is
pending and its deadline has not passed, so a late or repeated completion is refused, never
lost in the store. retry() marks the entry of the attempt the task gave up at (GIVEN_BACK):
the next attempt follows at once, and the policy counts from it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import errors
from ..durations import Duration, parse_duration
from ..jsonvalues import UnstorableValueError
from ..models import JOURNAL_NAME_LENGTH
from ..store.signals import TASK_SIGNAL
from . import journal
from .approvals import addressed_to, completed_before
from .retries import default_retry
from .stepcontext import StepContext
from .steps import check_arguments, step
from .waits import SignalCondition, TimerCondition, sleep, wait

if TYPE_CHECKING:
    from .surface import Surface

# The longest suffix an attempt's entry adds to the task's name: "#<attempt>:dispatch".
TASK_PREFIX = "$task:"  # a task attempt's wait: "$task:<name>#<attempt>"
# The field retry() sets on the entry of the attempt a task gave up at (its wait, or its
# dispatch when that raised): the task's next attempt is dispatched at once, counted from 1.
GIVEN_BACK = "attempts_back"
_SUFFIX = len("#4294967295:dispatch")


class TaskFailedError(errors.WorkflowError):
    """What fail_task() reported, as the cause of the task's StepFailedError."""


def task(
    x: Surface,
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
    check_arguments(x, dispatch, 1, f'The dispatch function of task "{name}"', "lambda step: ...")
    longest = JOURNAL_NAME_LENGTH - len(TASK_PREFIX) - _SUFFIX
    if len(name) > longest:
        raise ValueError(
            f'The task name "{name[:40]}..." is {len(name)} characters long; the most it can be '
            f"is {longest} (journaled as {TASK_PREFIX}<name>#<attempt>:dispatch)."
        )
    limit = None if timeout is None else parse_duration(timeout, f'Task "{name}" timeout')
    policy = default_retry().merged(retry, f'Task "{name}" retry')
    attempt = 1
    # The attempts before the ones retry() gave back: the policy counts from there.
    given_back = 0
    while True:
        entry = f"{TASK_PREFIX}{name}#{attempt}"
        failure = _dispatch(x, name, entry, dispatch, attempt)
        replayed = completed_before(x, entry) if failure is None else failure.replayed
        error: BaseException
        if failure is None:
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
                    x.guards.emit("task-completed", task=name, attempt=attempt)
                return copy.deepcopy(report.get("result"))
            if report is None:
                error = errors.StepTimeoutError(
                    f'Task "{name}" was not completed within {limit.total_seconds():g}s.'  # type: ignore[union-attr]
                )
            else:
                error = TaskFailedError(str(report.get("message", "")))
            failed_entry = entry
        else:
            error, failed_entry = failure.error, f"{entry}:dispatch"
        if _given_back(x, failed_entry):
            # retry() gave the task its attempts back after this one: dispatch again at once.
            given_back = attempt
            attempt += 1
            continue
        counted = attempt - given_back
        if failure is not None and failure.replayed:
            # The decision the run that journaled the failure took: its backoff, if any.
            gives_up = not _reached(x, f"{entry}:retry")
        else:
            gives_up = (failure is not None and failure.unstorable) or policy.gives_up(
                counted, error
            )
        if gives_up:
            if not replayed:
                _failed_event(x, name, attempt, error, None)
            if failure is not None:
                raise failure.gave_up(name, counted)
            raise journal.step_failed(name, counted, error)
        delay = policy.wait_before(counted, error)  # journaled by the backoff's sleep
        if not replayed:
            _failed_event(x, name, attempt, error, x.guards.now() + delay)
        sleep(x, f"{entry}:retry", TimerCondition(delay, None))
        attempt += 1


@dataclass(frozen=True)
class _Failure:
    """A dispatch that raised: `error` (the exception, or its journaled form on replay),
    whether an earlier execution journaled it (`replayed`), and what the step raised."""

    error: BaseException
    replayed: bool
    unstorable: bool
    raised: errors.StepFailedError

    def gave_up(self, name: str, attempts: int) -> errors.StepFailedError:
        """The task's StepFailedError, caused by the dispatch's error."""
        cause = self.raised.cause or {}
        return errors.StepFailedError(
            f'Step "{name}" failed after {attempts} attempt{"s" if attempts != 1 else ""}: '
            f"{cause.get('message', '')}",
            step=name,
            attempts=attempts,
            cause=cause,
            traceback=self.raised.traceback,
        )


def _dispatch(
    x: Surface, name: str, entry: str, dispatch: Callable[[StepContext], Any], attempt: int
) -> _Failure | None:
    """Run (or replay) the dispatch of attempt `attempt` as a step of one attempt, whose
    step.attempt is the task's attempt and whose idempotency key is the task's; None once it
    ran, the failure when it raised."""
    with x.lock:
        recorded = x.journal.entries.get(f"{entry}:dispatch")
    replayed = recorded is not None and recorded.get("status") == journal.FAILED
    try:
        step(
            x,
            f"{entry}:dispatch",
            dispatch,
            retry=False,  # a dispatch that raises fails the task's attempt: the task retries
            timeout=None,
            heartbeat_timeout=None,
            compensate=None,
            compensate_retry=None,
            first_attempt=attempt,
            key=name,
        )
    except errors.StepFailedError as failed:
        # The step raises its StepFailedError while it handles the attempt's error.
        raised = failed.__context__
        journaled = (failed.cause or {}).get("name")
        if replayed or not isinstance(raised, Exception) or type(raised).__name__ != journaled:
            return _Failure(errors.WorkflowError(str(failed)), replayed, False, failed)
        unstorable = isinstance(raised, UnstorableValueError) or (
            isinstance(raised, TypeError | ValueError) and "JSON" in str(raised)
        )
        return _Failure(raised, False, unstorable, failed)
    return None


def _given_back(x: Surface, name: str) -> bool:
    """Whether retry() gave the task its attempts back after the failed entry `name`."""
    with x.lock:
        return bool(x.journal.entries.get(name, {}).get(GIVEN_BACK))


def _reached(x: Surface, name: str) -> bool:
    with x.lock:
        return name in x.journal.entries


def _failed_event(x: Surface, name: str, attempt: int, error: BaseException, retry_at: Any) -> None:
    x.guards.emit(
        "step-failed",
        step=name,
        attempt=attempt,
        error={"name": type(error).__name__, "message": str(error)},
        retry_at=retry_at,
    )
