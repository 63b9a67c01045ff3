"""The workflow context (`ctx`) and the step context: the API workflow code calls."""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import random as _random
import threading
import time
import uuid as _uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .. import errors
from ..definitions import ScheduleOccurrence, WorkflowSignal
from ..durations import Duration, parse_duration
from ..instances import check_key
from ..jsonvalues import size
from ..models import JOURNAL_NAME_LENGTH, KEY_LENGTH
from ..results import WaitOutcome
from . import journal
from .gather import gather
from .interrupts import Suspend

if TYPE_CHECKING:
    from .execution import Execution

CUSTOM_STATUS_LIMIT = 16 * 1024


@dataclass(frozen=True)
class SignalCondition:
    """A signal to wait for, in wait_for_any()."""

    signal: str
    key: str | None
    match: Callable[[Any], bool] | None


@dataclass(frozen=True)
class TimerCondition:
    """A timer, in wait_for_any(): fires `duration` after the wait is first reached, or at `until`."""

    duration: timedelta | None
    until: datetime | None


@dataclass(frozen=True)
class ChildCondition(SignalCondition):
    """A child's end, in wait_for_any(): the signal its final write records for its parent."""

    child: ChildHandle | None = None


class ChildHandle:
    """A child workflow started with ctx.start_child(): its `id`, and `result()`, which waits
    for it to end and returns its output (or raises ChildWorkflowFailedError). Also a condition
    of ctx.wait_for_any()."""

    def __init__(self, id: str, workflow: str, ctx: WorkflowContext):
        self.id = id
        self.workflow = workflow
        self._ctx = ctx

    def __repr__(self) -> str:
        return f"ChildHandle(id={self.id!r}, workflow={self.workflow!r})"

    def condition(self) -> ChildCondition:
        from .children import CHILD_SIGNAL

        return ChildCondition(CHILD_SIGNAL, self.id, None, self)

    def result(self) -> Any:
        """Wait for the child to end (journaled as `$result:<id>`): its output, or
        ChildWorkflowFailedError when it failed, was cancelled, terminated or deleted."""
        from .children import outcome
        from .waits import wait

        x, name = self._ctx._x, f"$result:{self.id}"
        with x._lock:  # called again in this run: the end it returned before
            entry = x.journal.get(name) if name in x.reached else None
        if entry is not None and entry["status"] == journal.COMPLETED:
            return outcome(self, copy.deepcopy(entry["result"]["value"]))
        ended = wait(x, name, {"child": self.condition()}, kind="child")
        return outcome(self, ended.value)


class StepContext:
    """What a step's function (and a compensation) receives."""

    def __init__(
        self,
        execution: Execution,
        name: str,
        entry_name: str,
        attempt: int,
        progress: Any,
        reason: BaseException | None = None,
    ):
        self._execution: Any = execution
        self._name = name
        self._entry_name = entry_name
        self.idempotency_key = f"{execution.instance.id}:{entry_name}"
        self.attempt = attempt
        self.progress = progress
        self.reason = reason
        self.cancelled = threading.Event()
        self.last_beat = time.monotonic()
        self._places: Counter[tuple[Any, ...]] = Counter()
        self._places_lock = threading.Lock()

    def start_id(self, workflow: str) -> str:
        """The id of this attempt's next start() of `workflow` without an id: the step's
        idempotency key, the workflow and its place among the step's starts of it, the same at
        every attempt, so a retried step finds the instances it started. A digest where that
        text would be too long for an id, or ambiguous."""
        place = self._place("start", workflow)
        text = f"{self.idempotency_key}/{workflow}#{place}"
        if len(text) <= KEY_LENGTH and "/" not in workflow and "#" not in workflow:
            return text
        return "step-start:" + _digest(self.idempotency_key, workflow, place)

    def signal_id(self, name: str, key: str | None) -> str:
        """The dedupe id of this attempt's next signal() of `name` with `key` without an id:
        from the step's idempotency key and its place among the step's signals with that name
        and key, so a retried step's signals are stored once."""
        return "step-signal:" + _digest(
            self.idempotency_key, name, key, self._place("signal", name, key)
        )

    def _place(self, *what: Any) -> int:
        with self._places_lock:
            self._places[what] += 1
            return self._places[what]

    def heartbeat(self, progress: Any = None) -> None:
        """Journal a checkpoint (the next attempt gets it as `progress`) and renew heartbeat_timeout."""
        self.last_beat = time.monotonic()
        if progress is not None:
            progress = self._execution.to_json(progress, f'The progress of step "{self._name}"')
            self.progress = progress
            self._execution.checkpoint(self._entry_name, progress)


def _check_arguments(x: Any, fn: Callable[..., Any], count: int, what: str, like: str) -> None:
    """WorkflowDefinitionError unless `fn` can be called with `count` positional arguments: a
    `lambda: ...` for a step would otherwise fail every attempt with a TypeError."""
    try:
        inspect.signature(fn).bind(*([None] * count))
    except TypeError as error:
        raise x._define_error(
            errors.WorkflowDefinitionError(
                f"{what} must take {count} argument{'s' if count > 1 else ''} ({like}): "
                f"{getattr(fn, '__qualname__', fn)!r} cannot ({error})."
            )
        ) from None
    except ValueError:  # no signature to read (some builtins): let it run
        pass


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise errors.WorkflowDefinitionError(f"A {what} needs a non-empty name, got {name!r}.")
    return name


def _signal_name(signal: WorkflowSignal | str) -> str:
    name = signal.name if isinstance(signal, WorkflowSignal) else signal
    if not isinstance(name, str) or not name:
        raise errors.WorkflowDefinitionError(
            f"Expected a WorkflowSignal or a signal name, got {signal!r}."
        )
    return name


class WorkflowContext:
    """`ctx`: every side effect, wait and decision that must survive a restart goes through it."""

    def __init__(self, execution: Execution):
        self._x = execution
        instance = execution.instance
        self.instance_id: str = instance.id
        self.workflow: str = instance.workflow
        self.version: int = instance.version
        self.run: int = instance.runs
        self.schedule: ScheduleOccurrence | None = (
            ScheduleOccurrence(instance.schedule_id, instance.scheduled_at)
            if instance.schedule_id and instance.scheduled_at
            else None
        )

    # -- steps ---------------------------------------------------------------------------------

    def step(
        self,
        name: str,
        fn: Callable[[StepContext], Any],
        *,
        retry: Any = None,
        timeout: Duration | None = None,
        heartbeat_timeout: Duration | None = None,
        compensate: Callable[[Any, StepContext], Any] | None = None,
        compensate_retry: Any = None,
    ) -> Any:
        """Run `fn(step)` once and journal its result; later executions get the journaled result."""
        name = _name(name, "step")
        if not callable(fn):
            raise errors.WorkflowDefinitionError(f'Step "{name}" needs a function, got {fn!r}.')
        _check_arguments(self._x, fn, 1, f'The function of step "{name}"', "lambda step: ...")
        if compensate is not None:
            _check_arguments(
                self._x,
                compensate,
                2,
                f'The compensation of step "{name}"',
                "lambda result, step: ...",
            )
        longest = JOURNAL_NAME_LENGTH - len(journal.COMPENSATION_PREFIX)
        if compensate is not None and len(name) > longest:
            raise ValueError(
                f'The step name "{name[:40]}..." is {len(name)} characters long; a step with a '
                f"compensation (journaled as {journal.COMPENSATION_PREFIX}<step>) can be at most "
                f"{longest}."
            )
        from .steps import run_step

        return run_step(
            self._x,
            name,
            fn,
            retry=retry,
            timeout=None if timeout is None else parse_duration(timeout, f'Step "{name}" timeout'),
            heartbeat_timeout=(
                None
                if heartbeat_timeout is None
                else parse_duration(heartbeat_timeout, f'Step "{name}" heartbeat_timeout')
            ),
            compensate=compensate,
            compensate_retry=compensate_retry,
        )

    # -- time ----------------------------------------------------------------------------------

    def sleep(
        self, name: str, duration: Duration | None = None, *, until: datetime | None = None
    ) -> None:
        """Park the instance for `duration`, or until the aware datetime `until`."""
        name = _name(name, "sleep")
        timer = self.timer(duration, until=until)
        x = self._x
        position, entry = x.enter(name, "sleep")
        if entry is not None and entry["status"] == journal.COMPLETED:
            return None
        x.check_interrupts(name, entry)
        if entry is None:
            wake_at = x.timer_deadline(timer)
            entry = x.record(
                name,
                position,
                kind="sleep",
                status=journal.PENDING,
                started_at=journal.timestamp(x.now()),
                wake_at=journal.timestamp(wake_at),
            )
        due = journal.parse_timestamp(entry["wake_at"])
        assert due is not None
        if x.now() >= due:
            x.record(
                name,
                position,
                **{**entry, "status": journal.COMPLETED, "finished_at": journal.timestamp(x.now())},
            )
            return None
        x.suspend(wake_at=due)

    def timer(
        self, duration: Duration | None = None, *, until: datetime | None = None
    ) -> TimerCondition:
        """A timer condition for wait_for_any()."""
        if (duration is None) == (until is None):
            raise errors.WorkflowDefinitionError(
                "Give a timer either a duration or until=, not both or neither."
            )
        if until is not None:
            if not isinstance(until, datetime) or until.tzinfo is None:
                raise ValueError(f"until must be an aware datetime, not {until!r}.")
            return TimerCondition(None, until)
        return TimerCondition(parse_duration(duration, "The timer's duration"), None)  # type: ignore[arg-type]

    # -- signals -------------------------------------------------------------------------------

    def signal_wait(
        self,
        signal: WorkflowSignal | str,
        *,
        key: str | None = None,
        match: Callable[[Any], bool] | None = None,
    ) -> SignalCondition:
        """A signal condition for wait_for_any(): `signal` with exactly `key`, filtered by `match`."""
        if key is not None and not isinstance(key, str):
            raise errors.WorkflowDefinitionError(f"A signal key must be a string, not {key!r}.")
        name = _signal_name(signal)
        check_key("The signal name", name, self._x.using)
        check_key("The signal key", key, self._x.using)
        return SignalCondition(name, key, match)

    def wait_for_signal(
        self,
        name: str,
        signal: WorkflowSignal | str,
        *,
        key: str | None = None,
        timeout: Duration | None = None,
        match: Callable[[Any], bool] | None = None,
    ) -> Any:
        """Wait for `signal` with `key`; its payload, or None once `timeout` passes."""
        name = _name(name, "wait")
        conditions: dict[str, Any] = {"signal": self.signal_wait(signal, key=key, match=match)}
        if timeout is not None:
            conditions["timeout"] = self.timer(timeout)
        from .waits import wait

        return wait(self._x, name, conditions).value

    def wait_for_any(
        self, name: str, conditions: dict[str, Any] | None = None, /, **more: Any
    ) -> WaitOutcome:
        """Wait for whichever condition happens first; WaitOutcome(key, value)."""
        name = _name(name, "wait")
        merged = {**(conditions or {}), **more}
        if not merged:
            raise errors.WorkflowDefinitionError(
                f'wait_for_any("{name}") needs at least one condition.'
            )
        for key, condition in merged.items():
            if isinstance(condition, ChildHandle):
                merged[key] = condition.condition()
            elif not isinstance(condition, SignalCondition | TimerCondition):
                raise errors.WorkflowDefinitionError(
                    f'wait_for_any("{name}"): condition {key!r} must be ctx.signal_wait(), '
                    f"ctx.timer() or a child's handle, not {condition!r}."
                )
        from .children import outcome
        from .waits import wait

        won = wait(self._x, name, merged)
        winner = merged[won.key]
        if isinstance(winner, ChildCondition) and winner.child is not None:
            return WaitOutcome(won.key, outcome(winner.child, won.value))
        return won

    # -- children ------------------------------------------------------------------------------

    def start_child(
        self,
        workflow: Any,
        input: Any = None,
        *,
        id: str | None = None,
        version: int | None = None,
        timeout: Duration | None = None,
        parent_close: str = "cancel",
        priority: int | None = None,
        concurrency_key: str | None = None,
        rate_limit_key: str | None = None,
    ) -> ChildHandle:
        """Start a child workflow (once: a replay gets the same child back); its handle.

        `id` defaults to `<this instance's id>/<workflow>#<n>`, n counting that workflow's
        children in this run; give children started from gather() branches an id of your own.
        `parent_close` says what becomes of the child if it is still running when this instance
        ends or starts compensating: "cancel" (the default), "terminate" or "abandon".
        """
        from .children import start_child

        return start_child(
            self,
            self._x,
            workflow,
            input,
            id=id,
            version=version,
            timeout=timeout,
            parent_close=parent_close,
            priority=priority,
            concurrency_key=concurrency_key,
            rate_limit_key=rate_limit_key,
        )

    def execute_child(self, workflow: Any, input: Any = None, **options: Any) -> Any:
        """start_child(), then wait for the child's end: its output, or ChildWorkflowFailedError."""
        return self.start_child(workflow, input, **options).result()

    # -- structure -----------------------------------------------------------------------------

    def gather(self, *fns: Callable[[], Any]) -> list[Any]:
        """Run each zero-argument callable concurrently; their results, in argument order."""
        for fn in fns:
            if not callable(fn):
                raise errors.WorkflowDefinitionError(
                    f"gather() takes zero-argument callables, not {fn!r}."
                )
        return gather(self._x, list(fns))

    def commit(self, name: str) -> None:
        """The point of no return: discard the compensations registered so far."""
        name = _name(name, "commit point")
        x = self._x
        position, entry = x.enter(name, "commit")
        if entry is None or entry["status"] != journal.COMPLETED:
            x.check_interrupts(name, entry)
            x.record(
                name,
                position,
                kind="commit",
                status=journal.COMPLETED,
                finished_at=journal.timestamp(x.now()),
            )
        x.discard_compensations()

    def fail(self, message: str) -> None:
        """Fail the instance: its compensations run and it ends `failed` with WorkflowFailedError."""
        self._x._guard_step("ctx.fail()")  # in a step: raise NonRetryableStepError instead
        self._x.check_interrupts(None, None)
        raise errors.WorkflowFailedError(str(message), instance_id=self.instance_id)

    def set_status(self, value: Any) -> None:
        """Set the custom status (JSON, at most 16 KiB; None clears it), written with the next write."""
        value = self._x.to_json(value, "The custom status")
        if size(value) > CUSTOM_STATUS_LIMIT:
            raise TypeError("The custom status takes more than 16 KiB as JSON.")
        self._x.set_custom_status(value)

    # -- journaled values ----------------------------------------------------------------------

    def now(self) -> datetime:
        """The engine clock's time, journaled: every replay gets the same one."""
        value = self._x.value("now", lambda: journal.timestamp(self._x.now()))
        return datetime.fromisoformat(value)

    def random(self) -> float:
        """A random float in [0, 1), journaled."""
        return float(self._x.value("random", _random.random))

    def uuid(self) -> str:
        """A random UUID as a string, journaled."""
        return str(self._x.value("uuid", lambda: str(_uuid.uuid4())))


__all__ = ["SignalCondition", "StepContext", "Suspend", "TimerCondition", "WorkflowContext"]
