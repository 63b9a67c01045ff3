"""When a ctx call stops the workflow's code: a cancel or terminate, the run timeout, a
shutdown, a lost lease or a failing store (stop_reason), ctx.fail(), and the instance parking
(Suspend) until a timer or a signal."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import errors
from ..definitions import Workflow
from ..models import WorkflowInstance
from ..store import instances as store
from . import journal
from .interrupts import Cancel, HandBack, LeaseLost, ReplayEnd, RunTimeout, StoreFailed, Suspend
from .replay import Replay
from .threads import StartGate

if TYPE_CHECKING:
    from .stepcontext import StepContext


@dataclass
class Suspension:
    """Where the instance parks once its code stops: the earliest wake-up and the waits."""

    pending: bool = False
    wake_at: datetime | None = None
    waits: list[tuple[str, str | None]] = field(default_factory=list)


class Stops(Replay):
    """The cancel flags, the stop reason and the suspension of one execution."""

    def __init__(
        self,
        instance: WorkflowInstance,
        definition: Workflow,
        *,
        using: str,
        journal_entries: list[tuple[str, dict[str, Any]]],
    ):
        super().__init__(instance, definition, using=using, journal_entries=journal_entries)
        self.flags = store.LeaseFlags(
            instance.cancel_requested, instance.terminate_requested, instance.cancel_reason
        )
        self.suspension = Suspension()
        # "shutdown" or "lease-lost", set by the worker; "store-failed" by faults.call_store;
        # "hand-back" by an atomic step whose transaction a database fault rolled back.
        self.stop_reason: str | None = None
        # A BaseException that is not an Exception (SystemExit...) raised by a step: the attempt
        # failed; drain() raises it again once the instance is released.
        self.escaped: BaseException | None = None
        self.running_steps: set[StepContext] = set()
        self.gate = StartGate(self.suspension)

    def check_interrupts(self, name: str | None, entry: dict[str, Any] | None) -> None:
        """Before an operation that is not a replay: stop for a cancel, a timeout, a shutdown."""
        if self.replay_only:
            raise ReplayEnd()
        if self.definition_error is not None:
            raise self.definition_error
        swallowed = self.swallowed()
        if swallowed is not None:
            raise swallowed
        if self.stop_reason in ("lease-lost", "store-failed"):
            raise self.interrupted(self.stop_interrupt())
        flags = self.flags
        deadline = self.instance.deadline
        stop: BaseException | None = None
        if flags.terminate_requested or flags.cancel_requested:
            stop = Cancel(flags.terminate_requested)
        elif deadline is not None and self.now() >= deadline:
            stop = RunTimeout()
        elif self.stop_reason in ("shutdown", "hand-back"):
            raise self.interrupted(HandBack())
        if stop is None:
            return
        if (
            name is not None
            and entry is not None
            and entry["status"] in (journal.PENDING, journal.RUNNING)
        ):
            self.record(
                name,
                None,
                **{
                    **entry,
                    "status": journal.CANCELLED,
                    "finished_at": journal.timestamp(self.now()),
                },
            )
        raise self.interrupted(stop)

    def fail(self, message: str) -> None:
        """ctx.fail(): raise WorkflowFailedError (its compensations run), or the interrupt due."""
        self._guard_step("ctx.fail()")  # in a step: raise NonRetryableStepError instead
        self.check_interrupts(None, None)
        raise errors.WorkflowFailedError(str(message), instance_id=self.instance.id)

    def stop_interrupt(self) -> BaseException:
        """What stops this execution now that `stop_reason` is set."""
        if self.stop_reason == "lease-lost":
            return LeaseLost()
        if self.stop_reason == "store-failed":
            return StoreFailed()
        return HandBack()

    def note_cancel(self, *, terminate: bool, reason: str | None) -> None:
        """A cancel or terminate was accepted: stop at the next ctx call, and tell running steps."""
        with self._lock:
            flags = self.flags
            first = terminate or not flags.cancel_requested
            self.flags = store.LeaseFlags(
                True, flags.terminate_requested or terminate, reason if first else flags.reason
            )
            steps = list(self.running_steps)
        for step in steps:
            step.cancelled.set()

    def suspend(
        self, *, wake_at: datetime | None = None, waits: list[tuple[str, str | None]] | None = None
    ) -> None:
        """Park the instance once its code stops (at `wake_at` at the latest, and at a signal
        of `waits`): raises Suspend."""
        with self._lock:
            self.suspension.pending = True
            if wake_at is not None and (
                self.suspension.wake_at is None or wake_at < self.suspension.wake_at
            ):
                self.suspension.wake_at = wake_at
            self.suspension.waits.extend(waits or [])
        raise self.interrupted(Suspend())
