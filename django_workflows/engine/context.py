"""The workflow context (`ctx`): the API workflow code calls, a thin facade over the engine's
rooms, one concern each: steps.py, waits.py, children.py, gather.py, compensations.py (commit
points), values.py (journaled values), status.py (the custom status), updates.py (updates),
webhooks.py (webhooks), approvals.py (breakpoints), externaltasks.py (external tasks) and patches.py
(changes made in place)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..definitions import ScheduleOccurrence, WorkflowSignal
from ..durations import Duration
from ..results import WaitOutcome
from . import (
    approvals,
    attributes,
    children,
    compensations,
    continuation,
    gather,
    journal,
    patches,
    status,
    steps,
    updates,
    values,
    waits,
    webhooks,
)
from . import (
    externaltasks as tasks,
)
from .children import ChildHandle
from .continuation import SAME
from .interrupts import Suspend
from .stepcontext import StepContext
from .streams import Stream
from .waits import SignalCondition, TimerCondition
from .webhooks import Webhook

if TYPE_CHECKING:
    from .surface import Surface


class WorkflowContext:
    """`ctx`: every side effect, wait and decision that must survive a restart goes through it."""

    def __init__(self, execution: Surface):
        self._x = execution
        instance = execution.instance
        self.instance_id: str = instance.id
        self.workflow: str = instance.workflow
        self.version: int = instance.version
        self.run: int = instance.runs
        # How often the instance continued as new before this run (ctx.continue_as_new()).
        self.generation: int = instance.generation
        # The id of the worker running this execution (its lease owner), None outside one.
        self.worker_id: str | None = instance.lease_owner
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
        atomic: bool = False,
    ) -> Any:
        """Run `fn(step)` once and journal its result; later executions get the journaled result."""
        return steps.step(
            self._x,
            name,
            fn,
            retry=retry,
            timeout=timeout,
            heartbeat_timeout=heartbeat_timeout,
            compensate=compensate,
            compensate_retry=compensate_retry,
            atomic=atomic,
        )

    # -- time ----------------------------------------------------------------------------------

    def sleep(
        self, name: str, duration: Duration | None = None, *, until: datetime | None = None
    ) -> None:
        """Park the instance for `duration`, or until the aware datetime `until`."""
        name = journal.check_name(name, "sleep")
        waits.sleep(self._x, name, waits.timer(duration, until=until, what=f'Sleep "{name}"'))

    def timer(
        self, duration: Duration | None = None, *, until: datetime | None = None
    ) -> TimerCondition:
        """A timer condition for wait_for_any()."""
        return waits.timer(duration, until=until)

    # -- signals -------------------------------------------------------------------------------

    def signal_wait(
        self,
        signal: WorkflowSignal | str,
        *,
        key: str | None = None,
        match: Callable[[Any], bool] | None = None,
    ) -> SignalCondition:
        """A signal condition for wait_for_any(): `signal` with exactly `key`, filtered by `match`."""
        return waits.signal_condition(self._x, signal, key, match)

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
        name = journal.check_name(name, "wait")
        return waits.wait_for_signal(self._x, name, signal, key=key, timeout=timeout, match=match)

    def wait_for_any(
        self, name: str, conditions: dict[str, Any] | None = None, /, **more: Any
    ) -> WaitOutcome:
        """Wait for whichever condition happens first; WaitOutcome(key, value)."""
        name = journal.check_name(name, "wait")
        return waits.wait_for_any(self._x, name, {**(conditions or {}), **more})

    # -- updates -------------------------------------------------------------------------------

    def wait_for_update(self, name: str, *, timeout: Duration | None = None) -> Any:
        """Wait for update `name` to this instance (update()): its argument, or None once
        `timeout` passes. An update sent before the wait is kept for it."""
        return updates.wait_for_update(self._x, name, timeout=timeout)

    def update_wait(self, name: str) -> SignalCondition:
        """A condition for wait_for_any(): update `name` to this instance; its value is the argument."""
        return updates.update_condition(self._x, name)

    # -- webhooks ------------------------------------------------------------------------------

    def webhook(self, name: str) -> Webhook:
        """A one-shot URL (`Webhook(token, url)`) whose JSON POST `wait()` returns; the same
        token on every replay. Hand `url` to the other system inside a step."""
        return webhooks.webhook(self._x, journal.check_name(name, "webhook"))

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
        tags: list[str] | None = None,
        attributes: dict[str, Any] | None = None,
        queue: str | None = None,
        fair_key: str | None = None,
    ) -> ChildHandle:
        """Start a child workflow (once: a replay gets the same child back); its handle.

        `id` defaults to `<this instance's id>/<workflow>#<n>`, n counting that workflow's
        children in this run; give children started from gather() branches an id of your own.
        `parent_close` says what becomes of the child if it is still running when this instance
        ends or starts compensating: "cancel" (the default), "terminate" or "abandon".
        `tags` and search `attributes`: the child's own, as start() takes them. `queue`: the
        child's queue; by default its workflow's when that names one, else this instance's.
        `fair_key`: the child's; by default its workflow's fair_key(input) when it has one,
        else this instance's.
        """
        return children.start_child(
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
            tags=tags,
            attributes=attributes,
            queue=queue,
            fair_key=fair_key,
        )

    def execute_child(self, workflow: Any, input: Any = None, **options: Any) -> Any:
        """start_child(), then wait for the child's end: its output, or ChildWorkflowFailedError."""
        return self.start_child(workflow, input, **options).result()

    # -- people and other systems -------------------------------------------------------------

    def breakpoint(self, name: str) -> None:
        """Suspend until django_workflows.resume() (or the admin's Resume action) continues it."""
        approvals.breakpoint(self._x, name)

    def task(
        self,
        name: str,
        dispatch: Callable[[StepContext], Any],
        *,
        timeout: Duration | None = None,
        retry: Any = None,
    ) -> Any:
        """Run `dispatch(step)` once as a step, then wait for complete_task() (its result) or
        fail_task() (StepFailedError, retried like a step, as is the timeout)."""
        return tasks.task(self._x, name, dispatch, timeout=timeout, retry=retry)

    # -- structure -----------------------------------------------------------------------------

    def gather(self, *fns: Callable[[], Any]) -> list[Any]:
        """Run each zero-argument callable concurrently; their results, in argument order."""
        return gather.gather(self._x, list(fns))

    def commit(self, name: str) -> None:
        """The point of no return: discard the compensations registered so far."""
        compensations.commit(self._x, journal.check_name(name, "commit point"))

    def fail(self, message: str) -> None:
        """Fail the instance: its compensations run and it ends `failed` with WorkflowFailedError."""
        self._x.stops.fail(message)

    def continue_as_new(self, input: Any = SAME, *, version: int | str | None = None) -> None:
        """End this run and start the instance over with `input` (default: this run's), same
        id, an empty journal; `version` None keeps it, "latest" or an int picks one. Never returns."""
        continuation.continue_as_new(self._x, input, version)

    def set_value(self, name: str, value: Any) -> None:
        """Publish `value` (JSON, at most 64 KiB) as the value `name`, written at once; the
        latest of a name is what django_workflows.get_value() returns."""
        values.set_value(self._x, name, value)

    def stream(self, name: str) -> Stream:
        """The instance's stream `name`: each Stream.write() appends an item exactly once
        (journaled), Stream.close() ends it; read with django_workflows.read_stream()."""
        return Stream(self._x, name)

    def set_attributes(self, **values: Any) -> None:
        """Set search attributes (str, int, float, bool or aware datetime; None removes one),
        written at once, journaled: a replay writes nothing again."""
        attributes.set_attributes(self._x, values)

    def set_status(self, value: Any) -> None:
        """Set the custom status (JSON, at most 16 KiB; None clears it), written with the next write."""
        status.set_status(self._x, value)

    # -- changes made in place -----------------------------------------------------------------

    def patched(self, patch_id: str) -> bool:
        """Whether to take the new branch of the change `patch_id`: True for a run that reaches
        the call first, False for one that had passed it on the code before the change."""
        return patches.patched(self._x, patch_id)

    def deprecate_patch(self, patch_id: str) -> None:
        """The change `patch_id` is the only branch now; WorkflowNonDeterminismError for a run
        that had passed this point on the code before the change."""
        patches.deprecate_patch(self._x, patch_id)

    # -- journaled values ----------------------------------------------------------------------

    def now(self) -> datetime:
        """The engine clock's time, journaled: every replay gets the same one."""
        return values.now(self._x)

    def random(self) -> float:
        """A random float in [0, 1), journaled."""
        return values.random(self._x)

    def uuid(self) -> str:
        """A random UUID as a string, journaled."""
        return values.uuid(self._x)


def execution_of(ctx: WorkflowContext) -> Surface:
    """The execution behind `ctx` (for the async ctx that wraps it, asynccontext.py)."""
    return ctx._x


__all__ = [
    "SignalCondition",
    "StepContext",
    "Suspend",
    "TimerCondition",
    "Webhook",
    "WorkflowContext",
]
